"""Coverage: the share of the drawn face the identity's own texture covers.

Where the identity's texture is transparent (alpha 127 or less: what covered the
face in the photo, a part too poorly seen to fill, a patch refused by the
completion) the swap leaves the visitor's own face, so a swap can show half a
face of the identity and half of the visitor. The fill step does not see
that (it looks for a colour line, and a visitor's cheek beside an identity's
may have none); this figure does. Per swap triangle, the share of its texture
pixels that are opaque (``seams.mean_alpha`` over the thresholded alpha); drawn
onto the mesh the swap drew (``appliance.eval.drawn``); the figure is its mean
over the face oval, the eyes and the mouth opening left out (the visitor's own
show there by design), and the lips too for an identity photographed with an
open mouth, and so is the oval's outer band (``EDGE``): the swap feathers its
edge into the visitor's own face there (``swap.feather_fraction``, 0.08 of the
face), and the visitor's skin at the hairline or the side of the face reads as
their own hairline, not as a hole: the astronaut's fringe, seen through,
reaches about 0.15 face heights into the forehead. 1.0: the identity covers
the whole face; a half-face about 0.5.
"""

from __future__ import annotations

import logging

import cv2
import numpy as np
import numpy.typing as npt

from appliance.eval.seams import mean_alpha
from appliance.vision.identity import Identity
from appliance.vision.mesh import FACE_OVAL, INNER_MOUTH, LEFT_EYE, OUTER_LIPS, RIGHT_EYE

logger = logging.getLogger(__name__)

Points = npt.NDArray[np.floating]

OPAQUE = 127  # texture alpha above this is drawn (``mesh_warp``: the swap's own test)
SHIFT = 4  # fixed-point bits for the polygons
EDGE = 0.16  # the oval's outer band left out, in face heights
_OVAL = list(FACE_OVAL)


def opaque_share(identity: Identity) -> npt.NDArray[np.float64]:
    """Per swap triangle, the share (0-1) of its texture pixels the swap draws."""
    count = len(identity.triangles)
    texture = identity.texture_bgra
    if texture is None:
        return np.ones(count)
    opaque = np.where(texture[..., 3] > OPAQUE, 255, 0).astype(np.uint8)
    share: npt.NDArray[np.float64] = (
        mean_alpha(opaque, identity.texture_points, identity.triangles) / 255.0
    )
    return share


def coverage(identity: Identity, mesh: Points) -> float | None:
    """The share of the face drawn on ``mesh`` (478 points, pixels) that shows the
    identity; None for a face too small to measure."""
    xy = np.asarray(mesh, np.float64)[:, :2]
    lo = np.floor(xy[_OVAL].min(axis=0)).astype(int)
    hi = np.ceil(xy[_OVAL].max(axis=0)).astype(int)
    width, height = (hi - lo + 1).tolist()
    if width < 8 or height < 8:
        return None
    local = np.round((xy - lo) * (1 << SHIFT)).astype(np.int32)
    face = np.zeros((height, width), np.uint8)
    cv2.fillPoly(face, [local[_OVAL]], 255, cv2.LINE_8, SHIFT)
    band = max(1, round(EDGE * height))
    face = cv2.erode(face, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band + 1,) * 2))
    holes = [RIGHT_EYE, LEFT_EYE, OUTER_LIPS if identity.mouth_open else INNER_MOUTH]
    for ring in holes:
        cv2.fillPoly(face, [local[list(ring)]], 0, cv2.LINE_8, SHIFT)
    inside = face > 0
    if int(inside.sum()) < 64:
        return None
    share = opaque_share(identity)
    drawn = np.ones((height, width), np.float32)
    tris = np.asarray(identity.triangles)
    for t in np.flatnonzero(share < 1.0):
        cv2.fillConvexPoly(drawn, local[tris[t]], float(share[t]), cv2.LINE_8, SHIFT)
    return float(drawn[inside].mean())
