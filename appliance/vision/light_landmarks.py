"""Light landmarks: FaceMesh v1 (468 points) and MediaPipe Iris, in the 478-point layout.

The attention model (``landmarks.LandmarkModel``, 256 px crop) refines the
eyes, lips and irises inside one network; it costs about four times what
FaceMesh v1 (192 px crop) does. MediaPipe's older pipeline got the same
refinements from v1 plus its iris model, run on a 64 px crop around each
eye: 71 eye-region points, which replace the mesh's own, and 5 iris points
(centre first), which become points 468-472 and 473-477. The iris model
knows one eye; the other eye's crop is mirrored and its points mirrored back.

It is used where the attention model's extra detail is not there to see: a
face whose crop is smaller than v1's own input (``LIGHT_BELOW_PX``: its
refined points would be under a pixel apart); and for every face on one CPU
and on the degrade ladder's level, when the device cannot keep up (see
``FaceAnalyzer.from_store``). A face the liveness gate waits for keeps the
full model (``LivenessGate.watching``). The irises are real irises, so gaze
and the liveness gate's still-eyes check still work.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from appliance.inference.base import Model
from appliance.vision.landmarks import (
    NUM_LANDMARKS,
    PRESENCE_THRESHOLD,
    crop_input,
    crop_points,
    presence_of,
)
from appliance.vision.pose3d import similarity
from appliance.vision.types import FaceLandmarks, FloatArray, Roi

logger = logging.getLogger(__name__)

MESH_POINTS = 468
EYE_POINTS = 71
IRIS_POINTS = 5
# a face whose crop (roi.size, image pixels) is under this gets the light landmarks, and
# keeps them until its crop is this much larger (no switching to and fro at the edge)
LIGHT_BELOW_PX = 192.0
LIGHT_HYSTERESIS = 1.15
EYE_ROI_SCALE = 2.3  # MediaPipe's eye crop: 2.3 times the corners' bounding square


# per eye: its corners (the crop's rotation; the first is the crop's left), where its
# iris goes in the 478 layout, whether the crop is mirrored (the model knows the
# image-left eye), and the mesh points its 71 eye-region points replace (MediaPipe)
@dataclass(frozen=True)
class _Eye:
    a: int
    b: int
    iris_at: int
    mirror: bool
    region: tuple[int, ...]

    @property
    def indices(self) -> npt.NDArray[np.int_]:
        """Every point the iris model gives this eye: its region, then its iris."""
        return np.array([*self.region, *range(self.iris_at, self.iris_at + IRIS_POINTS)])


_EYES = (
    _Eye(
        33,
        133,
        468,
        False,
        (
            *(33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173),
            *(130, 25, 110, 24, 23, 22, 26, 112, 243, 247, 30, 29, 27, 28, 56, 190),
            *(226, 31, 228, 229, 230, 231, 232, 233, 244, 113, 225, 224, 223, 222, 221, 189),
            *(35, 124, 46, 53, 52, 65, 143, 111, 117, 118, 119, 120, 121, 128, 245),
            *(156, 70, 63, 105, 66, 107, 55, 193),
        ),
    ),
    _Eye(
        362,
        263,
        473,
        True,
        (
            *(263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398),
            *(359, 255, 339, 254, 253, 252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414),
            *(446, 261, 448, 449, 450, 451, 452, 453, 464, 342, 445, 444, 443, 442, 441, 413),
            *(265, 353, 276, 283, 282, 295, 372, 340, 346, 347, 348, 349, 350, 357, 465),
            *(383, 300, 293, 334, 296, 336, 285, 417),
        ),
    ),
)


def wants_light(roi: Roi, before: FaceLandmarks | None, everyone: bool = False) -> bool:
    """Whether the face in ``roi`` gets the light landmarks: ``everyone`` (the degrade
    ladder's level), or a crop smaller than v1's input (with hysteresis on ``before``)."""
    if everyone or roi.size < LIGHT_BELOW_PX:
        return True
    return before is not None and before.light and roi.size < LIGHT_BELOW_PX * LIGHT_HYSTERESIS


def _output_index(model: Model, values: int) -> int:
    sizes = [int(np.prod(o.shape)) for o in model.outputs]
    if values not in sizes:
        raise ValueError(f"{model.path.name} has no output of {values} values")
    return sizes.index(values)


def eye_roi(points: FloatArray, a: int, b: int) -> Roi:
    """MediaPipe's iris crop: the eye corners' bounding square, 2.3 times, turned with them."""
    pa, pb = points[a, :2], points[b, :2]
    side = float(np.abs(pb - pa).max()) * EYE_ROI_SCALE
    angle = math.atan2(float(pb[1] - pa[1]), float(pb[0] - pa[0]))
    centre = (pa + pb) / 2
    return Roi(float(centre[0]), float(centre[1]), max(side, 1.0), angle)


class LightLandmarkModel:
    """FaceMesh v1 on the ROI's crop, then the iris model on the eyes: 478 points.

    The iris model costs about what the mesh does, per eye. With the face's
    landmarks of the frame before (``before``), it runs on one eye a frame, in
    turn. The other eye keeps what the iris model last made of it, as a
    correction to the mesh's own eye points (the mesh's eye this frame plus
    the iris model's offset from it last frame): its lids still follow this
    frame (a blink a frame long closes both eyes), its iris moves with its
    corners. From an attention-model frame (no mesh of its own to correct),
    the eye is carried with the rest of the face (a similarity fit).
    """

    def __init__(self, mesh: Model, iris: Model) -> None:
        self.mesh = mesh
        self.iris = iris
        self.input_size = int(mesh.inputs[0].shape[1])
        self.eye_size = int(iris.inputs[0].shape[1])
        self._mesh_index = _output_index(mesh, MESH_POINTS * 3)
        self._flag_index = _output_index(mesh, 1)
        self._eye_index = _output_index(iris, EYE_POINTS * 3)
        self._iris_index = _output_index(iris, IRIS_POINTS * 3)

    def run(
        self, image: npt.NDArray[np.uint8], roi: Roi, before: FaceLandmarks | None = None
    ) -> FaceLandmarks:
        size = self.input_size
        outputs = self.mesh.run([crop_input(image, roi, size)[0]])
        presence = presence_of(float(outputs[self._flag_index].reshape(-1)[0]))
        points = np.zeros((NUM_LANDMARKS, 3), np.float32)
        points[:MESH_POINTS] = crop_points(outputs[self._mesh_index].reshape(-1, 3), roi, size)
        if presence < PRESENCE_THRESHOLD:
            return FaceLandmarks(points=points, presence=presence, roi=roi, light=True)
        unrefined = points[:MESH_POINTS].copy()
        fresh: int | None = None
        if before is not None and before.presence >= PRESENCE_THRESHOLD:
            fresh = 0 if before.fresh_eye is None else 1 - before.fresh_eye
            stale = _EYES[1 - fresh]
            if before.unrefined is not None:
                _keep_correction(points, before, before.unrefined, stale)
            else:
                _carry(points, before.points, stale.indices)
        for number, eye in enumerate(_EYES):
            if fresh is None or number == fresh:
                self._refine_eye(image, points, eye)
        return FaceLandmarks(
            points, presence, roi, light=True, fresh_eye=fresh, unrefined=unrefined
        )

    def _refine_eye(self, image: npt.NDArray[np.uint8], points: FloatArray, eye: _Eye) -> None:
        """The eye's region points and its iris, in place, from the iris model."""
        roi = eye_roi(points, eye.a, eye.b)
        size, mirror = self.eye_size, eye.mirror
        eye_z = float(points[[eye.a, eye.b], 2].mean())
        outputs = self.iris.run([crop_input(image, roi, size, mirror)[0]])
        contour = crop_points(outputs[self._eye_index].reshape(-1, 3), roi, size, mirror)
        iris = crop_points(outputs[self._iris_index].reshape(-1, 3), roi, size, mirror)
        if mirror:  # the ring's sideways points swap places in a mirror
            iris = iris[[0, 3, 2, 1, 4]]
        # the iris model's depths are relative to its own crop: keep the mesh's
        region = list(eye.region)
        contour[:, 2] = points[region, 2]
        points[region] = contour
        irises = slice(eye.iris_at, eye.iris_at + IRIS_POINTS)
        points[irises] = iris
        points[irises, 2] = eye_z


def _keep_correction(
    points: FloatArray, before: FaceLandmarks, unrefined: FloatArray, eye: _Eye
) -> None:
    """The eye's region (in place): this frame's mesh plus the iris model's correction to
    the mesh of the frame before; its iris moved as its corners moved."""
    region = list(eye.region)
    points[region, :2] += before.points[region, :2] - unrefined[region, :2]
    corners = [eye.a, eye.b]
    shift = (points[corners, :2] - before.points[corners, :2]).mean(axis=0)
    irises = slice(eye.iris_at, eye.iris_at + IRIS_POINTS)
    points[irises, :2] = before.points[irises, :2] + shift
    points[irises, 2] = points[corners, 2].mean()


# the mesh outside both eyes' regions: what the carried eye moves with
_FACE_ONLY = np.setdiff1d(np.arange(MESH_POINTS), np.concatenate([e.indices for e in _EYES]))


def _carry(points: FloatArray, before: FloatArray, eye: npt.NDArray[np.int_]) -> None:
    """The eye's points of the frame before, moved (in place) by the similarity that takes
    the rest of the mesh from then to now; depths scaled with it."""
    fit = similarity(_flat(before[_FACE_ONLY]), _flat(points[_FACE_ONLY]))
    points[eye, :2] = fit.apply(_flat(before[eye]))[:, :2]
    points[eye, 2] = before[eye, 2] * fit.scale


def _flat(points: FloatArray) -> npt.NDArray[np.float64]:
    """The points' x, y with z = 0: a fit in the image plane."""
    out = np.zeros((len(points), 3))
    out[:, :2] = points[:, :2]
    return out
