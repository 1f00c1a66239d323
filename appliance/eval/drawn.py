"""The mesh the swap really draws the identity onto, frame by frame (``mirror eval``).

With shape transfer the swap does not draw the identity's texture onto the
visitor's own landmarks but onto a target mesh with the identity's proportions
and the visitor's expression (``appliance.vision.shape_transfer``). The texture
stretch is the map from the photo to that mesh; measured against the visitor's
own landmarks it counted the difference between two faces' proportions (an
open-mouthed man's raised brows and wide eyes: 2.01 against 1.78 drawn).
"""

from __future__ import annotations

import logging
from typing import Any

from appliance.vision.types import FaceLandmarks, FloatArray

logger = logging.getLogger(__name__)


class DrawnMesh:
    """Taps a swapper's ``swap`` calls: ``take()`` gives the mesh of the last one (its
    ``target``, or the visitor's own landmarks without one) and forgets it."""

    def __init__(self, swapper: Any) -> None:
        self._swap = swapper.swap
        self._last: FloatArray | None = None
        swapper.swap = self._tap

    def _tap(self, image: Any, face: FaceLandmarks, *args: Any, **kwargs: Any) -> Any:
        target = kwargs.get("target")
        self._last = face.points if target is None else target
        return self._swap(image, face, *args, **kwargs)

    def take(self) -> FloatArray | None:
        out, self._last = self._last, None
        return out
