"""Hands in a photo: MediaPipe's palm detector, then its 21 hand landmarks per palm.

Used on identity photos only (never per frame). A hand resting on a cheek has
the face's own skin colour, so the occluder test (``occlusion``), which looks
for what is not skin, cannot see it; its shape can. The palm detector finds
palms (it also fires on some faces); the hand landmark model, run on the
rotated square MediaPipe derives from each palm, confirms the hand (its
presence score) and places the wrist, knuckles and finger joints. The hand's
mask is the outline of its 21 points and each finger drawn as a band about as
wide as the spacing of the knuckles (a finger's edge and shadow included).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import ModelHashError, ModelMissingError
from appliance.inference.base import Backend, Model
from appliance.modelstore import ModelStore
from appliance.vision.anchors import AnchorSpec, make_anchors
from appliance.vision.detector import decode, letterbox
from appliance.vision.roi import crop_to_image
from appliance.vision.types import Detection, FloatArray, Roi

logger = logging.getLogger(__name__)

Image = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.uint8]

PALMS = AnchorSpec(
    input_size=192, strides=(8, 16, 16, 16), anchors_per_layer=2, score_threshold=0.5
)
MAX_HANDS = 4
PALM_MODEL, HAND_MODEL = "palm_detector", "hand_landmarks"  # manifest names
MIN_PRESENCE = 0.5  # the landmark model's hand score: a face mistaken for a palm scores 0.001
# MediaPipe's palm-to-hand rectangle (palm_detection_detection_to_roi): the palm box
# grown 2.6 times, moved half a box towards the fingers, the wrist-to-middle-finger
# line turned upright
HAND_SCALE = 2.6
HAND_SHIFT = 0.5
WRIST, MIDDLE_BASE = 0, 2  # palm keypoints
# the second look's square (hand_landmark_landmarks_to_roi): around these points,
# grown 2 times, a tenth of a box towards the fingers
ROI_POINTS = (0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18)
ROI_SCALE = 2.0
ROI_SHIFT = 0.1
_PALM_KEYPOINTS = 7
# the 21 hand points: the wrist (0), then four per finger from its base, thumb first
FINGERS = ((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12), (13, 14, 15, 16), (17, 18, 19, 20))
KNUCKLES = (5, 9, 13, 17)
FINGER_WIDTH = 1.1  # a finger's band, in knuckle spacings
MARGIN = 0.3  # the mask grown by this many knuckle spacings (the landmarks are a bit off)


@dataclass(frozen=True)
class Hand:
    """A hand's 21 points (x, y in image pixels) and the landmark model's score."""

    points: FloatArray
    score: float


class HandFinder:
    """Finds hands with the palm detector and the hand landmark model."""

    def __init__(self, palms: Model, landmarks: Model) -> None:
        self.palms = palms
        self.landmarks = landmarks
        self.anchors = make_anchors(PALMS)
        if palms.outputs[0].shape[1] != len(self.anchors):
            raise ValueError(f"{palms.path.name} is not the palm detector")
        self.input_size = int(landmarks.inputs[0].shape[1])

    def find(self, image: Image) -> list[Hand]:
        """Every confirmed hand in ``image``."""
        hands = []
        for palm in self.detect_palms(image):
            hand = self._hand(image, hand_roi(palm))
            if hand.score < MIN_PRESENCE:
                continue
            # a second look, around the hand the first one placed (MediaPipe's tracking
            # step): the palm's box is only a rough guess of where the fingers are
            again = self._hand(image, roi_from_hand(hand.points))
            hands.append(again if again.score >= MIN_PRESENCE else hand)
        logger.debug("%d hand(s) found", len(hands))
        return hands

    def detect_palms(self, image: Image) -> list[Detection]:
        size = PALMS.input_size
        canvas, scale, pad = letterbox(image, size)
        rgb = cv2.cvtColor(canvas, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
        outputs = self.palms.run([rgb[None]])
        by_last_dim = {o.shape[-1]: o for o in outputs}
        raw, logits = by_last_dim[4 + 2 * _PALM_KEYPOINTS][0], by_last_dim[1][0, :, 0]
        placed = (scale, pad)
        threshold = PALMS.score_threshold
        return decode(raw, logits, self.anchors, PALMS, placed, min_score=threshold, most=MAX_HANDS)

    def _hand(self, image: Image, roi: Roi) -> Hand:
        size = self.input_size
        matrix = crop_to_image(roi, size)
        patch = cv2.warpAffine(
            image, matrix, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        )
        rgb = cv2.cvtColor(patch, cv2.COLOR_BGR2RGB).astype(np.float32) * (1.0 / 255.0)
        outputs = self.landmarks.run([rgb[None]])
        points = next(o for o in outputs if o.size == 63).reshape(21, 3)[:, :2]
        flag = float(next(o for o in outputs if o.size == 1).reshape(-1)[0])
        xy = (points @ matrix[:, :2].T + matrix[:, 2]).astype(np.float32)
        return Hand(xy, min(1.0, max(0.0, flag)))


def _upright(wrist: FloatArray, middle: FloatArray) -> float:
    """The turn (radians) that puts the wrist-to-middle-finger line upright."""
    return math.pi / 2 - math.atan2(-float(middle[1] - wrist[1]), float(middle[0] - wrist[0]))


def hand_roi(palm: Detection) -> Roi:
    """MediaPipe's square around the whole hand, from a palm detection."""
    angle = _upright(palm.keypoints[WRIST], palm.keypoints[MIDDLE_BASE])
    x0, y0, x1, y1 = palm.box
    width, height = x1 - x0, y1 - y0
    cx = (x0 + x1) / 2 + HAND_SHIFT * height * math.sin(angle)
    cy = (y0 + y1) / 2 - HAND_SHIFT * height * math.cos(angle)
    return Roi(cx, cy, max(width, height) * HAND_SCALE, angle)


def roi_from_hand(points: FloatArray) -> Roi:
    """MediaPipe's square around a hand from its landmarks (hand_landmark_landmarks_to_roi)."""
    angle = _upright(points[0], points[9])  # the wrist, the middle finger's knuckle
    part = points[list(ROI_POINTS)].astype(np.float64)
    c, s = math.cos(angle), math.sin(angle)
    upright = part @ np.array([[c, -s], [s, c]])  # rotated by -angle
    lo, hi = upright.min(axis=0), upright.max(axis=0)
    mid = (lo + hi) / 2
    width, height = hi - lo
    centre = np.array([mid[0] * c - mid[1] * s, mid[0] * s + mid[1] * c])
    cx = centre[0] + ROI_SHIFT * height * math.sin(angle)
    cy = centre[1] - ROI_SHIFT * height * math.cos(angle)
    return Roi(float(cx), float(cy), float(max(width, height)) * ROI_SCALE, angle)


def hand_mask(
    shape: tuple[int, ...],
    hands: list[Hand],
    offset: tuple[float, float] = (0.0, 0.0),
    scale: float = 1.0,
) -> Mask:
    """255 where one of ``hands`` is, in an image of ``shape`` whose pixel (0, 0) is
    ``offset`` of the photo the hands were found in, scaled by ``scale``."""
    mask = np.zeros(shape[:2], np.uint8)
    for hand in hands:
        one = np.zeros_like(mask)
        xy = (hand.points - np.asarray(offset, np.float32)) * scale
        knuckles = xy[list(KNUCKLES)]
        spacing = float(np.linalg.norm(np.diff(knuckles, axis=0), axis=1).mean())
        width = max(1, round(FINGER_WIDTH * spacing))
        # the whole hand's outline (the cheek between spread fingers goes with it:
        # finger edges and their shadows are in the gaps)
        cv2.fillPoly(one, [cv2.convexHull(np.round(xy).astype(np.int32))], 255)
        for finger in FINGERS:
            line = np.round(xy[list(finger)]).astype(np.int32)
            cv2.polylines(one, [line], False, 255, width, cv2.LINE_8)
            cv2.circle(one, (int(line[-1][0]), int(line[-1][1])), width // 2, 255, -1)
        grow = 2 * max(1, round(MARGIN * spacing)) + 1
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (grow, grow))
        mask = np.maximum(mask, np.asarray(cv2.dilate(one, kernel), np.uint8))
    return mask


class LazyHands:
    """The hand finder of a store's models, loaded on first use (the runtime never
    needs it). Without its models (an older offline bundle) no hand is found, and
    the log says why once."""

    def __init__(self, store: ModelStore, backend: Backend) -> None:
        self.store = store
        self.backend = backend
        self._finder: HandFinder | None = None
        self._missing = False

    def find(self, image: Image) -> list[Hand]:
        finder = self._load()
        return [] if finder is None else finder.find(image)

    def _load(self) -> HandFinder | None:
        if self._finder is None and not self._missing:
            try:
                palms = self.backend.load(self.store.path(PALM_MODEL))
                landmarks = self.backend.load(self.store.path(HAND_MODEL))
            except (ModelMissingError, ModelHashError) as exc:
                logger.warning("hands in identity photos are not looked for: %s", exc)
                self._missing = True
                return None
            self._finder = HandFinder(palms, landmarks)
        return self._finder
