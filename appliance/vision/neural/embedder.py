"""The ArcFace w600k_r50 embedder: aligned 112 px crop in, 512 numbers out.

Input [1,3,112,112] RGB, (x - 127.5) / 127.5, cut with the ArcFace 112
template; output [1,512], not normalised (callers normalise as their swapper
needs). Used once per enrolled identity, never per frame.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from appliance.inference.base import Model
from appliance.vision.neural.align import alignment, warp_crop
from appliance.vision.neural.contract import single_input
from appliance.vision.neural.output_check import EmbeddingError, output_problem
from appliance.vision.neural.specs import EMBEDDING_SIZE
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

SIZE = 112
NAME = "arcface_w600k_r50"


def embedder_blob(crop: npt.NDArray[np.uint8]) -> FloatArray:
    """A BGR 112 crop as the embedder's input tensor."""
    rgb = crop[:, :, ::-1].astype(np.float32)
    blob: FloatArray = ((rgb - 127.5) / 127.5).transpose(2, 0, 1)[None]
    return np.ascontiguousarray(blob)


class ArcFaceEmbedder:
    def __init__(self, model: Model) -> None:
        single_input(model, (1, 3, SIZE, SIZE), NAME)
        self.model = model

    def embed(self, image: npt.NDArray[np.uint8], points: FloatArray) -> FloatArray:
        """The 512-number embedding of the face with landmarks ``points`` in ``image``."""
        crop = warp_crop(image, alignment(points, "arcface_112_v2", SIZE), SIZE)
        out = self.model.run([embedder_blob(crop)])[0].reshape(-1)
        if out.size != EMBEDDING_SIZE:
            raise EmbeddingError(f"{NAME}: output has {out.size} values, expected 512")
        problem = output_problem(out)
        if problem is not None:
            raise EmbeddingError(f"{NAME}: {problem}")
        embedding: FloatArray = out.astype(np.float32)
        return embedding
