"""The ``source`` input per identity: embedded once, converted, cached.

Keyed by the identity object itself (an ``Identity`` is immutable; a new
enrollment is a new object), so frames never re-encode the source. The
cache keeps the last few identities and holds a reference to each, so a key
(``id``) is never reused while its entry lives. Thread-safe: faces are
swapped on worker threads, and the first of them computes while the others
wait.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import numpy as np

from appliance.inference.base import Model
from appliance.vision.identity import Identity
from appliance.vision.neural.emap import Matrix
from appliance.vision.neural.embedder import ArcFaceEmbedder
from appliance.vision.neural.output_check import EmbeddingError, output_problem
from appliance.vision.neural.specs import EMBEDDING_SIZE, SwapperSpec
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

KEEP_IDENTITIES = 8


def l2_normalised(vector: FloatArray) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm < 1e-12:
        raise EmbeddingError(f"embedding norm is {norm:.1e}: cannot normalise it")
    out: FloatArray = (vector / norm).astype(np.float32)
    return out


class SourceEncoder:
    """Turns an identity into the swapper's ``source`` tensor [1, 512], once per identity."""

    def __init__(
        self,
        embedder: ArcFaceEmbedder,
        spec: SwapperSpec,
        *,
        emap: Matrix | None = None,
        converter: Model | None = None,
    ) -> None:
        if spec.source == "emap" and emap is None:
            raise ValueError(f"{spec.name} needs its emap")
        self.embedder = embedder
        self.spec = spec
        self.emap = emap
        self.converter = converter
        self._cache: OrderedDict[int, tuple[Identity, FloatArray]] = OrderedDict()
        self._lock = threading.Lock()

    def source(self, identity: Identity) -> FloatArray:
        with self._lock:
            hit = self._cache.get(id(identity))
            if hit is not None and hit[0] is identity:
                self._cache.move_to_end(id(identity))
                return hit[1]
            vector = self._encode(identity)
            self._cache[id(identity)] = (identity, vector)
            while len(self._cache) > KEEP_IDENTITIES:
                self._cache.popitem(last=False)
            logger.info("%s: source embedding of %s computed", self.spec.name, identity.name)
            return vector

    def _encode(self, identity: Identity) -> FloatArray:
        embedding = self.embedder.embed(identity.texture, identity.points)
        if self.emap is not None and self.spec.source == "emap":
            vector = l2_normalised(l2_normalised(embedding) @ self.emap)
        else:
            vector = self._convert(embedding)
            if self.spec.source == "converted_normalised":
                vector = l2_normalised(vector)
        problem = output_problem(vector)
        if problem is not None:
            raise EmbeddingError(f"{self.spec.name} source of {identity.name}: {problem}")
        out: FloatArray = np.ascontiguousarray(vector.reshape(1, EMBEDDING_SIZE), np.float32)
        return out

    def _convert(self, embedding: FloatArray) -> FloatArray:
        if self.converter is None:
            return embedding
        converted = self.converter.run([embedding.reshape(1, EMBEDDING_SIZE)])[0].reshape(-1)
        if converted.size != EMBEDDING_SIZE:
            raise EmbeddingError(
                f"{self.spec.name} converter: {converted.size} values, expected {EMBEDDING_SIZE}"
            )
        return converted
