"""The independent face recogniser of ``mirror eval``: dlib's HOG detector,
5-point aligner and ResNet descriptor (128-d, Euclidean; 0.6 is dlib's
same-person threshold).

It comes from the optional ``eval`` extra (``dlib-bin`` and
``face-recognition-models``). Only the two files pinned below are ever read:
the package also holds a 68-point predictor whose training data forbids
commercial use, and it is never loaded. Each file's sha256 is checked before
dlib sees it; a mismatch raises :class:`ModelHashError` and nothing is loaded.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import MissingExtraError, ModelHashError, ModelMissingError
from appliance.modelstore.hashing import sha256_file

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install '.[eval]'"
SHAPE_PREDICTOR = "shape_predictor_5_face_landmarks.dat"
DESCRIPTOR_MODEL = "dlib_face_recognition_resnet_model_v1.dat"
PINNED_SHA256 = {
    SHAPE_PREDICTOR: "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
    DESCRIPTOR_MODEL: "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
}
SAME_PERSON_DISTANCE = 0.6
DETECT_MAX_SIDE = 1024  # the HOG detector runs on images scaled down to this side

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in image pixels
Descriptor = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RecogniserFiles:
    """Where the two permitted dlib model files are."""

    shape_predictor: Path
    descriptor: Path

    @classmethod
    def in_dir(cls, folder: Path) -> RecogniserFiles:
        return cls(folder / SHAPE_PREDICTOR, folder / DESCRIPTOR_MODEL)


def installed_files() -> RecogniserFiles:
    """The files inside the installed ``face_recognition_models`` package."""
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            f"mirror eval needs the face-recognition-models package: {INSTALL_HINT}"
        )
    return RecogniserFiles.in_dir(Path(next(iter(spec.submodule_search_locations))) / "models")


def verify_file(path: Path, expected_sha256: str) -> None:
    """Raise unless ``path`` exists and has the pinned sha256."""
    if not path.is_file():
        raise ModelMissingError(f"{path}: recogniser model file missing; {INSTALL_HINT}")
    found = sha256_file(path)
    if found != expected_sha256:
        raise ModelHashError(
            f"{path}: sha256 {found} differs from the pinned {expected_sha256}; "
            f"not loaded (reinstall with {INSTALL_HINT})"
        )


def _import_dlib() -> ModuleType:
    try:
        return importlib.import_module("dlib")
    except ImportError as exc:
        raise MissingExtraError(f"mirror eval needs dlib ({exc}): {INSTALL_HINT}") from exc


def _centre_inside(rect: Any, box: Box) -> bool:
    cx, cy = (rect.left() + rect.right()) / 2, (rect.top() + rect.bottom()) / 2
    return bool(box[0] <= cx <= box[2] and box[1] <= cy <= box[3])


class FaceRecogniser:
    """128-d descriptors of faces, independent of the appliance's own models."""

    def __init__(self, files: RecogniserFiles | None = None) -> None:
        files = files or installed_files()
        verify_file(files.shape_predictor, PINNED_SHA256[SHAPE_PREDICTOR])
        verify_file(files.descriptor, PINNED_SHA256[DESCRIPTOR_MODEL])
        dlib = _import_dlib()
        self._dlib = dlib
        self._detector = dlib.get_frontal_face_detector()
        self._predictor = dlib.shape_predictor(str(files.shape_predictor))
        self._encoder = dlib.face_recognition_model_v1(str(files.descriptor))
        logger.info("recogniser loaded from %s", files.descriptor.parent)

    def faces(self, image_bgr: npt.NDArray[np.uint8]) -> list[Any]:
        """dlib rectangles of the faces the HOG detector finds, in image pixels."""
        height, width = image_bgr.shape[:2]
        scale = min(1.0, DETECT_MAX_SIDE / max(height, width))
        gray = cv2.cvtColor(image_bgr, cv2.COLOR_BGR2GRAY)
        if scale < 1.0:
            gray = cv2.resize(gray, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        found = self._detector(np.ascontiguousarray(gray), 0)
        if not len(found):
            found = self._detector(np.ascontiguousarray(gray), 1)
        rect = self._dlib.rectangle
        return [
            rect(
                round(r.left() / scale),
                round(r.top() / scale),
                round(r.right() / scale),
                round(r.bottom() / scale),
            )
            for r in found
        ]

    def descriptor(
        self, image_bgr: npt.NDArray[np.uint8], near: Box | None = None
    ) -> Descriptor | None:
        """The descriptor of the largest face (whose centre is inside ``near`` when
        given), or None when the detector finds no such face."""
        faces = self.faces(image_bgr)
        if near is not None:
            faces = [r for r in faces if _centre_inside(r, near)]
        if not faces:
            return None
        face = max(faces, key=lambda r: r.width() * r.height())
        rgb = np.ascontiguousarray(cv2.cvtColor(image_bgr, cv2.COLOR_BGR2RGB))
        shape = self._predictor(rgb, face)
        return np.asarray(self._encoder.compute_face_descriptor(rgb, shape), np.float64)
