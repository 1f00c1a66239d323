"""Compare two variants of a model on real photos, in image pixels.

The detector variants run through ``FaceDetector`` (letterbox, anchors, NMS);
the 468-point v1 mesh runs on the crop a detection selects, its x, y mapped
back to the image. ``RecordingModel`` keeps the tensors a model was fed, which
are the calibration data of the int8 variants.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import InputError
from appliance.inference.base import Model, TensorSpec
from appliance.modelstore.store import ModelStore
from appliance.vision.detector import FaceDetector
from appliance.vision.roi import crop_to_image, roi_from_detection
from appliance.vision.types import Detection, FloatArray, Roi

logger = logging.getLogger(__name__)

MESH_POINTS = 468
DETECTOR_KIND = {"face_detector_short": "short", "face_detector_full": "full"}
PHOTO_ASSETS = ("astronaut", "grace_hopper")
PORTRAIT_GLOB = "portrait_*.jpg"

Image = npt.NDArray[np.uint8]


@dataclass(frozen=True)
class Photo:
    name: str
    image: Image


def load_photos(store: ModelStore, extra_dir: Path | None = None) -> list[Photo]:
    """The store's test photos, and the portraits of ``extra_dir`` when it exists."""
    paths = [(name, store.path(name)) for name in PHOTO_ASSETS]
    if extra_dir is not None and extra_dir.is_dir():
        paths += [(p.name, p) for p in sorted(extra_dir.glob(PORTRAIT_GLOB))]
    photos = []
    for name, path in paths:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise InputError(f"cannot read photo {path}")
        photos.append(Photo(name, np.asarray(image, dtype=np.uint8)))
    return photos


class RecordingModel:
    """A ``Model`` that passes through to another and keeps every feed."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.path = inner.path
        self.backend_name = inner.backend_name
        self.feeds: list[list[npt.NDArray[np.float32]]] = []

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return self.inner.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return self.inner.outputs

    def run(self, feeds: Sequence[npt.NDArray[np.float32]]) -> list[npt.NDArray[np.float32]]:
        self.feeds.append([np.array(f, copy=True) for f in feeds])
        return self.inner.run(feeds)

    def close(self) -> None:
        self.inner.close()


def mesh_input(image: Image, roi: Roi, size: int) -> tuple[FloatArray, FloatArray]:
    """The v1 mesh input (1, S, S, 3) RGB in [0, 1] and the crop-to-image affine."""
    matrix = crop_to_image(roi, size)
    patch = cv2.warpAffine(
        image, matrix, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    )
    rgb = cv2.cvtColor(patch, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
    return rgb[None], matrix.astype(np.float32)


def mesh_points(model: Model, image: Image, roi: Roi) -> FloatArray:
    """The 468 landmarks' x, y in image pixels."""
    size = int(model.inputs[0].shape[1])
    tensor, matrix = mesh_input(image, roi, size)
    outputs = model.run([tensor])
    sizes = [int(np.prod(o.shape)) for o in outputs]
    raw = outputs[sizes.index(MESH_POINTS * 3)].reshape(MESH_POINTS, 3)[:, :2]
    points: FloatArray = raw @ matrix[:, :2].T + matrix[:, 2]
    return points


def detections(model: Model, kind: str, image: Image) -> list[Detection]:
    return FaceDetector(model, kind).detect(image)


def face_rois(detector: Model, photos: Sequence[Photo]) -> list[tuple[Photo, Roi]]:
    """The most confident face of each photo (photos without one are left out)."""
    found = []
    for photo in photos:
        faces = detections(detector, "short", photo.image)
        if faces:
            found.append((photo, roi_from_detection(faces[0])))
        else:
            logger.info("%s: no face found, not used for comparison", photo.name)
    return found


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def detection_error_px(expected: list[Detection], actual: list[Detection]) -> float:
    """Worst box-corner or keypoint difference in pixels; infinite when faces differ."""
    if len(expected) != len(actual):
        return float("inf")
    worst = 0.0
    for det in expected:
        match = max(actual, key=lambda other: _iou(det.box, other.box))
        box = float(np.abs(np.subtract(det.box, match.box)).max())
        keypoints = float(np.abs(det.keypoints - match.keypoints).max())
        worst = max(worst, box, keypoints)
    return worst


@dataclass(frozen=True)
class Comparison:
    worst_px: float
    worst_photo: str


def compare(
    model_name: str,
    expected: Model,
    actual: Model,
    photos: Sequence[Photo],
    rois: Sequence[tuple[Photo, Roi]],
) -> Comparison:
    """Worst difference between two variants of ``model_name`` over the photos."""
    results: list[tuple[float, str]] = []
    if model_name in DETECTOR_KIND:
        kind = DETECTOR_KIND[model_name]
        for photo in photos:
            a = detections(expected, kind, photo.image)
            b = detections(actual, kind, photo.image)
            results.append((detection_error_px(a, b), photo.name))
    else:
        for photo, roi in rois:
            want = mesh_points(expected, photo.image, roi)
            got = mesh_points(actual, photo.image, roi)
            results.append((float(np.abs(want - got).max()), photo.name))
    if not results:
        return Comparison(float("inf"), "no photo with a face")
    worst = max(results)
    return Comparison(worst[0], worst[1])
