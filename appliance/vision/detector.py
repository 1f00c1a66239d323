"""BlazeFace face detection: letterbox, run, decode anchors, weighted NMS, map back."""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.inference.base import Model
from appliance.vision.anchors import FULL_RANGE, SHORT_RANGE, AnchorSpec, make_anchors
from appliance.vision.thumbnail import thumbnail
from appliance.vision.types import Detection, FloatArray

logger = logging.getLogger(__name__)

# a model input and how it maps back: (tensor, scale, (pad x, pad y))
Prepared = tuple[FloatArray, float, tuple[int, int]]

NMS_IOU = 0.3


class FaceDetector:
    """Finds faces with a BlazeFace model (short range by default, full range for far faces)."""

    def __init__(
        self, model: Model, kind: str = "short", min_score: float | None = None, max_faces: int = 16
    ) -> None:
        self.model = model
        self.spec: AnchorSpec = SHORT_RANGE if kind == "short" else FULL_RANGE
        self.anchors = make_anchors(self.spec)
        expected = model.outputs[0].shape[1]
        if expected != len(self.anchors):
            raise ValueError(
                f"{model.path.name} has {expected} anchors, {kind} range expects "
                f"{len(self.anchors)}: wrong model for this detector kind"
            )
        self.min_score = self.spec.score_threshold if min_score is None else min_score
        self.max_faces = max_faces

    def detect(self, image: npt.NDArray[np.uint8]) -> list[Detection]:
        return self.finish(self.prepare(image))

    def prepare(self, image: npt.NDArray[np.uint8]) -> Prepared:
        """The model's input for ``image`` (its own copy: the image may change after)."""
        return self._letterbox(image)

    def finish(self, prepared: Prepared) -> list[Detection]:
        """Run the model on a prepared input and decode its faces (image pixels)."""
        tensor, scale, pad = prepared
        regressors, logits = self._run(tensor)
        return self._decode(regressors, logits, scale, pad)

    def copy(self, model: Model) -> FaceDetector:
        """The same detector on another interpreter of its model (for another thread)."""
        kind = "short" if self.spec is SHORT_RANGE else "full"
        return FaceDetector(model, kind, self.min_score, self.max_faces)

    def _letterbox(self, image: npt.NDArray[np.uint8]) -> Prepared:
        canvas, scale, pad = letterbox(image, self.spec.input_size)
        rgb = cv2.cvtColor(canvas, cv2.COLOR_BGR2RGB).astype(np.float32)
        tensor = (rgb * (1.0 / 127.5) - 1.0)[None]
        return tensor, scale, pad

    def _run(self, tensor: FloatArray) -> tuple[FloatArray, FloatArray]:
        outputs = self.model.run([tensor])
        by_last_dim = {o.shape[-1]: o for o in outputs}
        return by_last_dim[16][0], by_last_dim[1][0, :, 0]

    def _decode(
        self, raw: FloatArray, logits: FloatArray, scale: float, pad: tuple[int, int]
    ) -> list[Detection]:
        placed = (scale, pad)
        return decode(
            raw,
            logits,
            self.anchors,
            self.spec,
            placed,
            min_score=self.min_score,
            most=self.max_faces,
        )


def decode(
    raw: FloatArray,
    logits: FloatArray,
    anchors: FloatArray,
    spec: AnchorSpec,
    placed: tuple[float, tuple[int, int]],
    *,
    min_score: float,
    most: int,
) -> list[Detection]:
    """An SSD model's boxes and keypoints (as many as ``raw`` has after the box), scores
    from ``logits``, in the pixels of the image letterboxed with ``placed`` (scale, pad)."""
    scores = (1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -100.0, 100.0)))).astype(
        np.float32
    )
    keep = np.flatnonzero(scores >= min_score)
    if keep.size == 0:
        return []
    scale, pad = placed
    size = float(spec.input_size)
    at = anchors[keep] * size
    values = raw[keep]
    centres = values[:, 0:2] + at
    half = values[:, 2:4] / 2.0
    boxes = np.concatenate([centres - half, centres + half], axis=1)
    kps = values[:, 4:].reshape(len(keep), -1, 2) + at[:, None]
    offset = np.array(pad, np.float32)
    boxes = (boxes - np.tile(offset, 2)) / scale
    kps = (kps - offset) / scale
    return weighted_nms(boxes.astype(np.float32), kps.astype(np.float32), scores[keep], most)


def letterbox(
    image: npt.NDArray[np.uint8], size: int
) -> tuple[npt.NDArray[np.uint8], float, tuple[int, int]]:
    """``image`` scaled to fit a black ``size`` square, centred: (square, scale, (pad x, pad y))."""
    h, w = image.shape[:2]
    scale = size / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    pad_x, pad_y = (size - nw) // 2, (size - nh) // 2
    canvas = np.zeros((size, size, 3), np.uint8)
    canvas[pad_y : pad_y + nh, pad_x : pad_x + nw] = thumbnail(image, (nw, nh))
    return canvas, scale, (pad_x, pad_y)


def _iou(box: FloatArray, others: FloatArray) -> FloatArray:
    x0 = np.maximum(box[0], others[:, 0])
    y0 = np.maximum(box[1], others[:, 1])
    x1 = np.minimum(box[2], others[:, 2])
    y1 = np.minimum(box[3], others[:, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    result: FloatArray = inter / np.maximum(area + areas - inter, 1e-6)
    return result


def weighted_nms(
    boxes: FloatArray, kps: FloatArray, scores: FloatArray, max_faces: int
) -> list[Detection]:
    """MediaPipe's weighted NMS: overlapping candidates are averaged by score."""
    order = np.argsort(-scores)
    remaining = order
    out: list[Detection] = []
    while remaining.size and len(out) < max_faces:
        best = remaining[0]
        overlap = _iou(boxes[best], boxes[remaining])
        group = remaining[overlap > NMS_IOU]
        weights = scores[group][:, None]
        total = float(weights.sum())
        box = (boxes[group] * weights).sum(axis=0) / total
        points = (kps[group] * weights[:, :, None]).sum(axis=0) / total
        out.append(
            Detection(
                box=(float(box[0]), float(box[1]), float(box[2]), float(box[3])),
                keypoints=points.astype(np.float32),
                score=float(scores[best]),
            )
        )
        remaining = remaining[overlap <= NMS_IOU]
    return out
