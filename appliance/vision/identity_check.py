"""Is this photo a good identity? One verdict per measure, in words staff understand.

Shared by ``mirror identity check PHOTO`` and the admin page's upload. Each
check gives ``good``, ``usable`` (with a hint saying what would work better)
or ``refused``. Only what cannot work is refused: no face, several faces, a
face under enrolment's minimum size. The photo's verdict is its worst check.

Thresholds, picked on the embedded astronaut and Grace Hopper photos, the
shared portraits, the painting, the photo held in a hand, turned, blurred,
darkened and side-lit versions of them, and frames of the shared videos
(measures in ``photo_measures``):

- face size (pixels between the outer eye corners): under 24 refused (what
  ``enroll`` needs); under 50 a hint (the smallest shared faces: painting 55,
  astronaut 61; a visitor's face at 640x480 is 60-100).
- head turn (yaw): over 8° a hint. Frontal photos measure 0-3°; the shared
  turned portrait (``portrait_woman_pose.jpg``) and Einstein 10°, the turning
  woman of ``expressive_woman.mp4`` (frames 250-280) 16-21°.
- chin up or down (pitch, from a level head): over 20° a hint (photos: -5 to 9°).
- tilt to the side (roll): over 20° a hint (photos: up to 10°).
- eyes: ``eyeBlinkLeft/Right`` over 0.5 is closed (a blink measures 0.6-0.75,
  open eyes under 0.25).
- mouth: ``jawOpen`` over 0.35 is open (the open-mouthed portrait 0.91; smiles
  with teeth 0.02-0.19 are fine).
- expression: a smile or raised brows are taken out of the identity's shape at
  enrolment (``neutralise``); a lowered brow is not (it is how many people look),
  so ``browDownLeft/Right`` over 0.6 is a hint (the frowning, turned frame 265 of
  ``expressive_woman.mp4`` 0.81; the shared portraits up to 0.53).
- sharpness (variance of the Laplacian with the face scaled to 64 px between the
  eyes): under 25 a hint. Photos measure 40-1630; Grace Hopper blurred with a
  Gaussian of 3 px (1.6 px at that scale) 43, of 5 px 17.
- exposure (median luma of the face): under 60 too dark, over 220 or more than
  15% of the face clipped (pure white or black) too bright. Photos: 127-182.
- lighting evenness (median luma of the darker half of the face over the
  brighter): under 0.62 a hint. Photos: 0.69-0.97; Einstein, lit from one
  side, 0.56.
- occlusion (share of the face the swap's occluder test finds covered, the
  test that hides a fringe or a hand of the identity photo): over 8% a hint
  (the astronaut's hair: 5%). A hand of the face's own colour is found by its
  shape (``hands``: MediaPipe's palm and hand landmark models): over 3% of the
  face under a hand is a hint of its own (the turned portrait's hand at her
  cheek: 6.1%, mirrored 4.9%; every other shared photo 0, the photo held in a hand
  too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blendshapes import BlendshapeModel
from appliance.vision.hands import Hand, hand_mask
from appliance.vision.identity import MIN_EYE_DISTANCE_PX
from appliance.vision.occlusion import occluders
from appliance.vision.photo_measures import (
    Light,
    eye_distance,
    face_mask,
    head_pose,
    light,
    sharpness,
)
from appliance.vision.types import FaceLandmarks

logger = logging.getLogger(__name__)

Verdict = Literal["good", "usable", "refused"]
Image = npt.NDArray[np.uint8]

SMALL_FACE_PX = 50.0
MAX_YAW_DEG = 8.0
MAX_PITCH_DEG = 20.0
MAX_ROLL_DEG = 20.0
EYE_CLOSED_SCORE = 0.5
MOUTH_OPEN_SCORE = 0.35
FROWN_SCORE = 0.6
MIN_SHARPNESS = 25.0
DARK_LUMA = 60.0
BRIGHT_LUMA = 220.0
MAX_CLIPPED = 0.15
MIN_EVENNESS = 0.62
MAX_COVERED = 0.08
MAX_HELD = 0.03
OCCLUSION_MARGIN = 0.25  # the occluder test runs on the face box grown by this share

_RANK: dict[Verdict, int] = {"good": 0, "usable": 1, "refused": 2}
STRAIGHT = "a photo looking straight at the camera works best"
NO_FACE = "no face found in the photo: use a clear, well-lit, frontal photo of one person"
SEVERAL_FACES = "more than one face ({count}) in the photo: use a photo of one person"


@dataclass(frozen=True)
class Finding:
    """One check's verdict, what it measured and what to tell staff."""

    check: str
    verdict: Verdict
    message: str
    value: float | None = None


@dataclass(frozen=True)
class Assessment:
    """Every check on one photo; ``verdict`` is the worst of them."""

    faces: int
    findings: tuple[Finding, ...]
    measures: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        worst: Verdict = "good"
        for finding in self.findings:
            if _RANK[finding.verdict] > _RANK[worst]:
                worst = finding.verdict
        return worst

    @property
    def refused(self) -> bool:
        return self.verdict == "refused"

    def with_finding(
        self, finding: Finding, measures: dict[str, float] | None = None
    ) -> Assessment:
        """This assessment with one more finding (``photo_grade``'s ``result``) and measures."""
        return Assessment(
            self.faces, (*self.findings, finding), {**self.measures, **(measures or {})}
        )

    def hints(self) -> list[str]:
        """What would work better (the ``usable`` findings' messages)."""
        return [f.message for f in self.findings if f.verdict == "usable"]

    def reasons(self) -> list[str]:
        """Why the photo cannot be used (the ``refused`` findings' messages)."""
        return [f.message for f in self.findings if f.verdict == "refused"]

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "faces": self.faces,
            "checks": [
                {"check": f.check, "verdict": f.verdict, "message": f.message, "value": f.value}
                for f in self.findings
            ],
            "measures": dict(self.measures),
        }


class IdentityChecker:
    """Assesses identity photos with a face analyzer and the blendshape model."""

    def __init__(self, analyzer: FaceAnalyzer, blendshapes: BlendshapeModel) -> None:
        self.analyzer = analyzer
        self.blendshapes = blendshapes

    @classmethod
    def for_analyzer(cls, analyzer: FaceAnalyzer, store: ModelStore) -> IdentityChecker:
        """A checker on ``analyzer``, with the blendshape model on the same backend."""
        backend = analyzer.backend or LiteRTBackend()
        return cls(analyzer, BlendshapeModel(backend.load(store.path("face_blendshapes"))))

    def assess(self, image: Image) -> Assessment:
        faces = self.analyzer.analyze(image, refine=True)
        if not faces:
            return Assessment(0, (Finding("faces", "refused", NO_FACE, 0.0),))
        if len(faces) > 1:
            message = SEVERAL_FACES.format(count=len(faces))
            return Assessment(len(faces), (Finding("faces", "refused", message, len(faces)),))
        return self._one_face(image, faces[0])

    def _one_face(self, image: Image, face: FaceLandmarks) -> Assessment:
        points = face.points
        eyes = eye_distance(points)
        found = [Finding("faces", "good", "one face", 1.0), _size(eyes)]
        if found[-1].verdict == "refused":
            return Assessment(1, tuple(found), {"eye_distance_px": eyes})
        pose = head_pose(points)
        scores = self.blendshapes.run(points)
        detail = sharpness(image, points)
        lit = light(image, points)
        covered = _covered_share(image, points)
        held = _held_share(image, points, self.analyzer.hands_in(image))
        found += [
            _yaw(pose.yaw),
            _pitch(pose.pitch),
            _roll(pose.roll),
            _eyes(scores["eyeBlinkRight"], scores["eyeBlinkLeft"]),
            _mouth(scores["jawOpen"]),
            _frown(max(scores["browDownLeft"], scores["browDownRight"])),
            _sharpness(detail),
            _exposure(lit.median, lit.clipped),
            _evenness(lit),
            _occlusion(covered, held),
        ]
        measures = {
            "eye_distance_px": eyes,
            "yaw_deg": pose.yaw,
            "pitch_deg": pose.pitch,
            "roll_deg": pose.roll,
            "eye_closed_right": scores["eyeBlinkRight"],
            "eye_closed_left": scores["eyeBlinkLeft"],
            "mouth_open": scores["jawOpen"],
            "frown": max(scores["browDownLeft"], scores["browDownRight"]),
            "sharpness": detail,
            "face_luma": lit.median,
            "clipped": lit.clipped,
            "evenness": lit.evenness,
            "covered": covered,
            "hand_covered": held,
        }
        measures = {k: round(float(v), 3) for k, v in measures.items()}
        assessment = Assessment(1, tuple(found), measures)
        logger.info("identity photo: %s (%s)", assessment.verdict, "; ".join(assessment.hints()))
        return assessment


def _size(eyes: float) -> Finding:
    if eyes < MIN_EYE_DISTANCE_PX:
        return Finding(
            "size",
            "refused",
            f"the face is too small ({eyes:.0f} px between the eyes, at least "
            f"{MIN_EYE_DISTANCE_PX:.0f} needed): use a closer or larger photo",
            eyes,
        )
    if eyes < SMALL_FACE_PX:
        return Finding(
            "size",
            "usable",
            f"the face is small ({eyes:.0f} px between the eyes): a closer or larger photo "
            f"(at least {SMALL_FACE_PX:.0f} px) gives a sharper face",
            eyes,
        )
    return Finding("size", "good", f"the face is {eyes:.0f} px between the eyes", eyes)


def _yaw(yaw: float) -> Finding:
    side = "left" if yaw > 0 else "right"
    if abs(yaw) > MAX_YAW_DEG:
        text = f"the head is turned {abs(yaw):.0f}° to the person's {side}: {STRAIGHT}"
        return Finding("yaw", "usable", text, yaw)
    return Finding("yaw", "good", f"the head faces the camera (turned {abs(yaw):.0f}°)", yaw)


def _pitch(pitch: float) -> Finding:
    if abs(pitch) > MAX_PITCH_DEG:
        way = "raised" if pitch > 0 else "lowered"
        text = f"the chin is {way} {abs(pitch):.0f}°: {STRAIGHT}"
        return Finding("pitch", "usable", text, pitch)
    return Finding("pitch", "good", f"the head is level ({abs(pitch):.0f}° up or down)", pitch)


def _roll(roll: float) -> Finding:
    if abs(roll) > MAX_ROLL_DEG:
        text = f"the head is tilted {abs(roll):.0f}° to the side: an upright head works best"
        return Finding("roll", "usable", text, roll)
    return Finding("roll", "good", f"the head is upright (tilted {abs(roll):.0f}°)", roll)


def _eyes(right: float, left: float) -> Finding:
    worst = max(right, left)
    if right > EYE_CLOSED_SCORE and left > EYE_CLOSED_SCORE:
        text = "the eyes look closed: a photo with open eyes works best"
        return Finding("eyes", "usable", text, worst)
    if worst > EYE_CLOSED_SCORE:
        text = "one eye looks closed: a photo with both eyes open works best"
        return Finding("eyes", "usable", text, worst)
    return Finding("eyes", "good", "the eyes are open", worst)


def _mouth(jaw_open: float) -> Finding:
    if jaw_open > MOUTH_OPEN_SCORE:
        text = (
            "the mouth is open: a closed mouth works best (the visitor's own lips are "
            "shown instead)"
        )
        return Finding("mouth", "usable", text, jaw_open)
    return Finding("mouth", "good", "the mouth is closed", jaw_open)


def _frown(brow_down: float) -> Finding:
    if brow_down > FROWN_SCORE:
        text = (
            "the brows are drawn down (a frown): the swap keeps the brows as photographed, "
            "so every visitor would frown; a relaxed face works best"
        )
        return Finding("expression", "usable", text, brow_down)
    return Finding("expression", "good", "the face is relaxed", brow_down)


def _sharpness(detail: float) -> Finding:
    if detail < MIN_SHARPNESS:
        text = "the face looks blurred: a sharper photo (in focus, no motion) works best"
        return Finding("sharpness", "usable", text, detail)
    return Finding("sharpness", "good", "the face is sharp", detail)


def _exposure(median: float, clipped: float) -> Finding:
    if median < DARK_LUMA:
        text = "the face is too dark: a brighter photo works best"
        return Finding("exposure", "usable", text, median)
    if median > BRIGHT_LUMA or clipped > MAX_CLIPPED:
        text = "the face is too bright (parts are pure white): a darker photo works best"
        return Finding("exposure", "usable", text, median)
    return Finding("exposure", "good", "the face is well exposed", median)


def _evenness(lit: Light) -> Finding:
    right, left = lit.sides
    darker, brighter = ("right", "left") if right < left else ("left", "right")
    ratio = lit.evenness
    if ratio < MIN_EVENNESS:
        text = (
            f"the person's {darker} side of the face is {100 * (1 - ratio):.0f}% darker than "
            f"the {brighter}: even, frontal light works best (the shadow is carried onto "
            "the visitor)"
        )
        return Finding("lighting", "usable", text, ratio)
    return Finding("lighting", "good", "the face is evenly lit", ratio)


def _occlusion(covered: float, held: float) -> Finding:
    if held > MAX_HELD:
        text = (
            f"a hand covers about {100 * held:.0f}% of the face: that part is taken from the "
            "other side of the face or shows the visitor's own; a photo with the hands away "
            "from the face works best"
        )
        return Finding("occlusion", "usable", text, held)
    if covered > MAX_COVERED:
        text = (
            f"about {100 * covered:.0f}% of the face is covered (hair, a hand, an object): "
            "that part shows the visitor's own face; an uncovered face works best"
        )
        return Finding("occlusion", "usable", text, covered)
    return Finding("occlusion", "good", "nothing covers the face", covered)


def _held_share(image: Image, points: npt.NDArray[np.float32], hands: list[Hand]) -> float:
    """The share of the face a hand of ``hands`` covers."""
    if not hands:
        return 0.0
    face = face_mask(image.shape, points) > 0
    if not face.any():
        return 0.0
    return float(((hand_mask(image.shape, hands) > 0) & face).sum() / face.sum())


def _covered_share(image: Image, points: npt.NDArray[np.float32]) -> float:
    """The share of the face the swap's occluder test finds covered."""
    xy = points[:468, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    margin = (hi - lo) * OCCLUSION_MARGIN
    h, w = image.shape[:2]
    x0, y0 = (max(0, int(v)) for v in lo - margin)
    x1, y1 = int(min(w, hi[0] + margin[0] + 1)), int(min(h, hi[1] + margin[1] + 1))
    crop = np.ascontiguousarray(image[y0:y1, x0:x1])
    local = points.copy()
    local[:, :2] -= (x0, y0)
    face = face_mask(crop.shape, local) > 0
    if not face.any():
        return 0.0
    covered = occluders(crop, local) > 0
    return float((covered & face).sum() / face.sum())
