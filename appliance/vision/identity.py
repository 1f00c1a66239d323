"""Identity enrollment: analyse a source photo once, keep what the swap needs."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt

from appliance.errors import InputError, NoFaceError
from appliance.vision.analyzer import FaceAnalyzer, decode_image
from appliance.vision.gaze import IrisPatch, cut_irises
from appliance.vision.hands import hand_mask
from appliance.vision.mesh import LEFT_EYE_EAR, RIGHT_EYE_EAR
from appliance.vision.neutral import (
    CLOSED_GAP,
    LOWER_INNER,
    UPPER_INNER,
    close_mouth,
    face_height,
    mouth_gap,
)
from appliance.vision.neutralise import neutralise
from appliance.vision.occlusion import occluders
from appliance.vision.photo_measures import face_mask
from appliance.vision.pixel_limit import READABLE, check_image_file
from appliance.vision.segmentation import not_face
from appliance.vision.symmetry import Completed, complete
from appliance.vision.triangulation import IntArray, delaunay, swap_mesh
from appliance.vision.types import FloatArray

logger = logging.getLogger(__name__)

MIN_EYE_DISTANCE_PX = 24.0
TEXTURE_MARGIN = 0.25
MAX_TEXTURE_SIDE = 512
# the mesh is triangulated with the lips this far apart (a share of the face height):
# no triangle then joins the upper lip to the lower one, so an opening mouth moves
# each lip with its own contour instead of stretching triangles across the mouth
TRIANGULATION_GAP = 0.04
# the face-parsing model finding more than this share of the face covered is not
# believed: Grace Hopper blurred by 4 px reads 38% covered, by 5 px 98% (the whole
# texture went transparent: the visitor's own face showed); the shared portraits and
# the demo photos read 1.6-12.8%. The colour test is used instead
PARSER_MAX_COVERED = 0.25


@dataclass(frozen=True)
class Identity:
    """An enrolled source face: texture crop and its landmarks in texture pixels."""

    name: str
    texture: npt.NDArray[np.uint8]
    points: FloatArray  # (478, 3)
    triangles: IntArray  # (T, 3)
    shape: FloatArray  # (478, 3): ``points`` with the mouth closed and the held expression
    # taken out (``neutral_shape``): the base for reshaping
    mouth_open: bool = False  # photographed with an open mouth: its lips are not used
    # texture plus alpha: 0 where something covers the identity's face in the photo
    # (a fringe of hair, a hand), so the swap never pastes it onto the visitor
    texture_bgra: npt.NDArray[np.uint8] | None = None
    # the frontal, mirror-completed texture (``texture_bgra`` is then that texture):
    # ``completed.uv`` are the mesh's coordinates in it
    completed: Completed | None = None
    # each eye's iris, cut from the texture (which then has bare eyes) and drawn
    # where the visitor looks (appliance.vision.gaze); None: the photo's own irises
    irises: tuple[IrisPatch | None, ...] | None = None

    @property
    def texture_points(self) -> FloatArray:
        """The mesh (478, 2) in the pixels of the texture the swap samples."""
        if self.completed is not None:
            return self.completed.uv
        out: FloatArray = self.points[:, :2]
        return out


def read_image(path: Path) -> npt.NDArray[np.uint8]:
    """Read an image file, with a one-line error for every way it can fail."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if not data:
        raise InputError(f"{path}: empty file")
    check_image_file(path)  # from the header: a decompression bomb is never decoded
    image = decode_image(data)
    if image is None:
        raise InputError(f"{path}: not a readable image ({READABLE})")
    return image


def enroll(
    image: npt.NDArray[np.uint8], analyzer: FaceAnalyzer, name: str = "identity"
) -> Identity:
    """Analyse ``image`` and cache texture + landmarks; the largest face is used."""
    faces = analyzer.analyze(image, refine=True)
    if not faces:
        raise NoFaceError(
            f"{name}: no face found in the identity photo; use a clear, frontal photo"
        )
    face = faces[0]
    eye_dist = float(np.linalg.norm(face.xy[RIGHT_EYE_EAR[0]] - face.xy[LEFT_EYE_EAR[3]]))
    if eye_dist < MIN_EYE_DISTANCE_PX:
        raise NoFaceError(
            f"{name}: the face is too small ({eye_dist:.0f} px between the eyes, "
            f"at least {MIN_EYE_DISTANCE_PX:.0f} needed); use a closer photo"
        )
    texture, points, (offset, scale) = _texture_crop(image, face.points)
    logger.info("enrolled %s: face %.0f px between the eyes", name, eye_dist)
    triangles = delaunay(lips_apart(points), swap_mesh(points))
    placed = (offset, scale)
    covered = _covered(image, face.points, points, texture, placed, analyzer=analyzer)
    # the irises are cut from the photo itself, so the completion mirrors bare eyes
    bare, irises = cut_irises(_with_alpha(texture, covered), points[:, :2])
    completed = complete(bare, points, triangles, MAX_TEXTURE_SIDE)
    return Identity(
        name=name,
        texture=texture,
        points=points,
        triangles=triangles,
        shape=neutral_shape(points, analyzer),
        mouth_open=mouth_gap(points) >= CLOSED_GAP,
        texture_bgra=completed.texture_bgra,
        completed=completed,
        irises=irises,
    )


def neutral_shape(points: FloatArray, analyzer: FaceAnalyzer) -> FloatArray:
    """The identity's mesh with the mouth closed and, where the blendshape model can be
    read, the photo's held expression (brows, mouth corners) taken out."""
    closed = close_mouth(points)
    model = None if analyzer.expressions is None else analyzer.expressions.load()
    return closed if model is None else neutralise(closed, model.run)


def lips_apart(points: FloatArray) -> FloatArray:
    """``points`` with the mouth opened to at least ``TRIANGULATION_GAP`` (for the
    triangulation only: the texture keeps its own points).

    Everything under the upper lip's inner line is moved down, the lower lip with the
    chin under it, fading out to the sides past the mouth's corners (a jaw opening).
    """
    gap = float(np.linalg.norm(points[13, :2] - points[14, :2]))
    drop = TRIANGULATION_GAP * face_height(points) - gap
    if drop <= 0.0:
        return points
    line = points[list(UPPER_INNER), :2].astype(np.float64)
    order = np.argsort(line[:, 0])
    left, right = float(line[:, 0].min()), float(line[:, 0].max())
    fade = 0.5 * max(right - left, 1.0)
    xy = points[:, :2].astype(np.float64)
    below = xy[:, 1] > np.interp(xy[:, 0], line[order, 0], line[order, 1]) + 0.5
    below[list(UPPER_INNER)] = False
    below[list(LOWER_INNER[1:-1])] = True
    outside = np.maximum(left - xy[:, 0], xy[:, 0] - right)
    weight = np.clip(1.0 - outside / fade, 0.0, 1.0) * below
    out = points.copy()
    out[:, 1] += (drop * weight).astype(out.dtype)
    return out


def _covered(
    image: npt.NDArray[np.uint8],
    photo_points: FloatArray,
    points: FloatArray,
    texture: npt.NDArray[np.uint8],
    placed: tuple[tuple[float, float], float],
    *,
    analyzer: FaceAnalyzer,
) -> npt.NDArray[np.uint8]:
    """255 where something covers the face in the photo, in the pixels of the texture
    crop (``texture``, ``points``; at ``placed``: its corner in the photo, its scale): what
    the face-parsing model finds is not the face (hair, a hand or an object, a hat), and
    the hands the hand models find (a hand of the face's own colour)."""
    offset, scale = placed
    shape = texture.shape
    held = hand_mask(shape, analyzer.hands_in(image), offset, scale)
    if analyzer.parser is None:  # an analyzer built without a model store
        return held
    classes = analyzer.parser.load().classes(image, photo_points, shape, offset, scale)
    parsed = not_face(classes, points)
    share = _share_of_face(parsed, points)
    if share > PARSER_MAX_COVERED:
        # the model does not read this photo as a face (a blurred or odd photo: half of
        # it covered is no fringe); the colour test stands in
        logger.warning(
            "identity photo: the face-parsing model finds %.0f%% of the face covered; "
            "not believed, the colour test is used",
            100 * share,
        )
        parsed = occluders(texture, points)
    return np.maximum(parsed, held)


def _share_of_face(mask: npt.NDArray[np.uint8], points: FloatArray) -> float:
    inside = face_mask(mask.shape, points) > 0
    return float((mask[inside] > 0).mean()) if inside.any() else 0.0


def _with_alpha(
    texture: npt.NDArray[np.uint8], covered: npt.NDArray[np.uint8]
) -> npt.NDArray[np.uint8]:
    """The texture with an alpha channel that hides ``covered``: what covers the face in
    the photo."""
    if covered.any():
        logger.info(
            "identity photo: %.0f%% of the texture is covered (hair, a hand); not used",
            100 * float((covered > 0).mean()),
        )
    return np.ascontiguousarray(np.dstack([texture, 255 - covered]))


def enroll_file(path: Path, analyzer: FaceAnalyzer) -> Identity:
    image = read_image(path)
    try:
        return enroll(image, analyzer, name=Path(path).stem)
    except NoFaceError as exc:
        raise NoFaceError(f"{path}: {str(exc).split(': ', 1)[1]}") from exc


def _texture_crop(
    image: npt.NDArray[np.uint8], points: FloatArray
) -> tuple[npt.NDArray[np.uint8], FloatArray, tuple[tuple[float, float], float]]:
    """The face's crop, its points in it, and where it is: (its corner in ``image``, scale)."""
    xy = points[:, :2]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    margin = (hi - lo) * TEXTURE_MARGIN
    h, w = image.shape[:2]
    x0, y0 = (max(0, int(v)) for v in lo - margin)
    x1, y1 = int(min(w, hi[0] + margin[0] + 1)), int(min(h, hi[1] + margin[1] + 1))
    crop = image[y0:y1, x0:x1]
    local = points.copy()
    local[:, :2] -= (x0, y0)
    scale = min(1.0, MAX_TEXTURE_SIDE / max(crop.shape[:2]))
    if scale < 1.0:
        crop = np.asarray(
            cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA), np.uint8
        )
        local *= scale
    return np.ascontiguousarray(crop), local.astype(np.float32), ((float(x0), float(y0)), scale)
