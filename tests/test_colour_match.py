"""The colour match (appliance.vision.blend.match_colour) on real faces: Einstein's
colourised photo, with a dark moustache and brows, onto a frame of the tanned, warmly
lit woman of expressive_woman.mp4.

Before: a flat chroma shift and chroma contrast raised to the visitor's (ratios
1.8-3.0 on the shared portraits) turned dark features rust-orange and a pale face's
make-up and stray hair deep orange.
"""

from __future__ import annotations

import cv2
import numpy as np

from appliance.vision.blend import match_colour
from appliance.vision.identity import read_image
from tests.conftest import media_frames, shared_media

SIZE = (220, 260)


def _faces() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    photo = read_image(shared_media("portrait_einstein_bw.jpg"))
    warped = cv2.resize(photo[100:330, 150:345], SIZE, interpolation=cv2.INTER_AREA)
    frame = next(iter(media_frames("expressive_woman.mp4", 1)))
    visitor = cv2.resize(frame[90:420, 130:410], SIZE, interpolation=cv2.INTER_AREA)
    mask = np.zeros((SIZE[1], SIZE[0]), np.uint8)
    cv2.ellipse(mask, (SIZE[0] // 2, SIZE[1] // 2), (100, 125), 0, 0, 360, 255, -1)
    return warped, visitor, mask


def _ycc(image: np.ndarray) -> np.ndarray:
    out: np.ndarray = cv2.cvtColor(image, cv2.COLOR_BGR2YCrCb).astype(np.float32)
    return out


def test_the_face_takes_the_visitors_mean_colour() -> None:
    warped, visitor, mask = _faces()
    out = match_colour(warped, visitor, mask)
    inside = mask > 0
    got, want = _ycc(out)[inside].mean(axis=0), _ycc(visitor)[inside].mean(axis=0)
    assert np.abs(got - want).max() < 3.0, (got, want)


def test_dark_features_are_tinted_less_than_the_skin() -> None:
    warped, visitor, mask = _faces()
    out = match_colour(warped, visitor, mask)
    inside = mask > 0
    before, after = _ycc(warped)[inside], _ycc(out)[inside]
    # the tint of the darkest tenth (moustache, brows) against the mean tint
    shift = after[:, 1:] - before[:, 1:]
    dark = before[:, 0] <= np.percentile(before[:, 0], 10)
    mean_tint = float(np.linalg.norm(shift.mean(axis=0)))
    dark_tint = float(np.linalg.norm(shift[dark].mean(axis=0)))
    assert mean_tint > 10.0  # the visitor is much warmer than the photo
    assert dark_tint < 0.6 * mean_tint, (dark_tint, mean_tint)


def test_the_photos_chroma_contrast_is_not_raised() -> None:
    """The photo at one brightness (only its chroma varies: make-up, lips, hair): its
    chroma spread is kept, not raised to the visitor's."""
    warped, visitor, mask = _faces()
    ycc = cv2.cvtColor(warped, cv2.COLOR_BGR2YCrCb)
    ycc[..., 0] = 150
    flat = cv2.cvtColor(ycc, cv2.COLOR_YCrCb2BGR)
    out = match_colour(flat, visitor, mask)
    inside = mask > 0
    before, after = _ycc(flat)[inside, 1:].std(axis=0), _ycc(out)[inside, 1:].std(axis=0)
    assert (after <= before + 0.5).all(), (before, after)


def test_a_soft_photos_contrast_is_not_raised() -> None:
    """A low-contrast photo (its brightness' spread a third of Einstein's) keeps its own
    contrast on a visitor with more: raised, its shadows and noise were amplified."""
    warped, visitor, mask = _faces()
    ycc = cv2.cvtColor(warped, cv2.COLOR_BGR2YCrCb).astype(np.float32)
    ycc[..., 0] = 150 + (ycc[..., 0] - 150) / 3
    soft = cv2.cvtColor(ycc.round().astype(np.uint8), cv2.COLOR_YCrCb2BGR)
    out = match_colour(soft, visitor, mask)
    inside = mask > 0
    before, after = _ycc(soft)[inside, 0].std(), _ycc(out)[inside, 0].std()
    assert after <= before + 0.5, (before, after)
