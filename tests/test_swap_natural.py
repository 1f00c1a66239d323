"""A natural face from any usable photo: turned photos completed from their mirror side,
the visitor's gaze, the visitor's light, the frame's detail (issue 14, items 2-5).

Real models on the shared photos and video; the figures are ``mirror eval``'s
(appliance.eval.artefacts) with their documented thresholds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.config import Settings
from appliance.eval import artefacts
from appliance.eval.regions import crop_box, face_mask
from appliance.media.frames import Frame
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_processor
from appliance.vision import gaze, mesh, relight, symmetry
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.blend import ColourMemory
from appliance.vision.identity import MAX_TEXTURE_SIDE, enroll, read_image
from appliance.vision.mesh import LEFT_EYE, RIGHT_EYE
from appliance.vision.symmetry import MIRROR, yaw_degrees_of
from tests.conftest import media_frames, shared_media

LOOKS_ASIDE = 20  # talking_man_greenscreen.mp4: the man looks far to one side here


def _frames(count: int) -> list[np.ndarray]:
    return media_frames("talking_man_greenscreen.mp4", count)


def _swap_clip(store: ModelStore, analyzer: FaceAnalyzer, photo: Path, count: int) -> list[Frame]:
    processor = build_processor(Settings(), store, str(photo), analyzer=analyzer, max_faces=1)
    out = []
    for index, image in enumerate(_frames(count)):
        frame = Frame(image=image.copy(), index=index, capture_ns=index * 40_000_000)
        out.append(processor.process(frame))
    return out


def test_mirror_table_pairs_left_and_right() -> None:
    assert (MIRROR[MIRROR] == np.arange(478)).all()
    assert [MIRROR[i] for i in RIGHT_EYE] == list(LEFT_EYE)
    assert MIRROR[1] == 1 and MIRROR[152] == 152  # nose tip, chin: on the midline
    assert MIRROR[468] == 473  # iris centres


@pytest.mark.parametrize("flip", [False, True], ids=["turned", "turned-mirrored"])
def test_turned_photo_is_completed_not_stretched(analyzer: FaceAnalyzer, flip: bool) -> None:
    photo = read_image(shared_media("portrait_woman_pose.jpg"))
    if flip:
        photo = np.ascontiguousarray(photo[:, ::-1])
    identity = enroll(photo, analyzer)
    visitor = analyzer.analyze(_frames(1)[0], refine=True)[0].points
    assert identity.completed is not None
    assert identity.completed.mirrored.mean() > 0.05  # the hidden side comes from the mirror
    stretch = artefacts.texture_stretch(identity, visitor)
    as_photographed = artefacts.texture_stretch(
        dataclasses.replace(identity, completed=None), visitor
    )
    assert stretch is not None and as_photographed is not None
    assert artefacts.within("stretch", stretch), stretch
    assert not artefacts.within("stretch", as_photographed), as_photographed  # the old smear


def test_mirrored_photo_turns_the_other_way(analyzer: FaceAnalyzer) -> None:
    photo = read_image(shared_media("portrait_woman_pose.jpg"))
    yaw = yaw_degrees_of(analyzer.analyze(photo, refine=True)[0].points)
    flipped = np.ascontiguousarray(photo[:, ::-1])
    yaw_flipped = yaw_degrees_of(analyzer.analyze(flipped, refine=True)[0].points)
    assert abs(yaw) > 5
    assert yaw_flipped == pytest.approx(-yaw, abs=3)


def test_gaze_follows_the_visitor(store: ModelStore, analyzer: FaceAnalyzer) -> None:
    photo = shared_media("portrait_woman_outdoor.jpg")
    frames = _swap_clip(store, analyzer, photo, LOOKS_ASIDE + 1)
    original = _frames(LOOKS_ASIDE + 1)[LOOKS_ASIDE]
    seen = analyzer.analyze(original, refine=True)[0].points
    swapped = analyzer.analyze(frames[LOOKS_ASIDE].image, refine=True)[0].points
    identity_gaze = artefacts.gaze(analyzer.analyze(read_image(photo), refine=True)[0].points)
    visitor_gaze = artefacts.gaze(seen)
    assert identity_gaze is not None and visitor_gaze is not None
    assert np.linalg.norm(identity_gaze - visitor_gaze) > 15  # the photo looks elsewhere
    error = artefacts.gaze_error(seen, swapped)
    # the swapped irises turn most of the way (the photo's own would leave it all;
    # irises moved inside the photo's eye opening only went 0.7 of it)
    apart = float(np.linalg.norm(identity_gaze - visitor_gaze))
    assert error is not None and error < 0.55 * apart, (error, apart)


def _face_figures(
    frame: Frame, original: np.ndarray, analyzer: FaceAnalyzer
) -> tuple[float, float]:
    points = analyzer.analyze(original, refine=True)[0].points
    x0, y0, x1, y1 = crop_box(points, 0, original.shape)
    mask = face_mask(original.shape, points)[y0:y1, x0:x1]
    a, b = original[y0:y1, x0:x1], frame.image[y0:y1, x0:x1]
    shading = artefacts.shading_mismatch(a, b, mask, float(y1 - y0))
    detail = artefacts.detail_ratio(a, b, mask)
    assert shading is not None and detail is not None
    return shading, detail


def test_side_lit_photo_takes_the_visitors_light_and_detail(
    store: ModelStore, analyzer: FaceAnalyzer, tmp_path: Path
) -> None:
    image = read_image(shared_media("portrait_woman_outdoor.jpg")).astype(np.float32)
    ramp = np.linspace(0.35, 1.0, image.shape[1], dtype=np.float32)[None, :, None]
    side_lit = tmp_path / "side_lit.png"
    cv2.imwrite(str(side_lit), np.clip(image * ramp, 0, 255).astype(np.uint8))
    frames = _swap_clip(store, analyzer, side_lit, 12)
    shading, detail = _face_figures(frames[-1], _frames(12)[-1], analyzer)
    assert artefacts.within("shading", shading), shading
    # without sharpening this pair keeps 0.22 of the frame's detail; with the
    # detail measured on the moved, resampled frame (the old reference) 0.44
    assert artefacts.within("detail_ratio", detail), detail


def test_irises_are_cut_out_and_the_eyes_left_bare(analyzer: FaceAnalyzer) -> None:
    identity = enroll(read_image(shared_media("portrait_woman_outdoor.jpg")), analyzer)
    assert identity.irises is not None and identity.completed is not None
    texture = identity.completed.texture_bgra[..., :3].astype(np.float32)
    for patch, centre in zip(identity.irises, (468, 473), strict=True):
        assert patch is not None and patch.radius > 3
        iris = patch.image[..., :3][patch.image[..., 3] > 200].astype(np.float32).mean()
        x, y = np.round(identity.completed.uv[centre]).astype(int)
        bare = texture[y - 1 : y + 2, x - 1 : x + 2].mean()
        assert bare > iris + 25, (bare, iris)  # the white now, not the dark iris


def _grown(ring: np.ndarray, factor: float) -> np.ndarray:
    centre = ring.mean(axis=0)
    grown: np.ndarray = np.round((ring - centre) * factor + centre).astype(np.int32)
    return grown


def _pose_cheeks(
    analyzer: FaceAnalyzer, flip: bool, oval: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """portrait_woman_pose.jpg's completed texture (mirrored first with ``flip``), its
    points in it, and its cheeks: 255 inside the face oval grown by ``oval``, without
    the eyes, brows, lips and nose."""
    photo = read_image(shared_media("portrait_woman_pose.jpg"))
    if flip:
        photo = np.ascontiguousarray(photo[:, ::-1])
    completed = enroll(photo, analyzer).completed
    assert completed is not None
    texture, uv = completed.texture_bgra, completed.uv
    cheeks = np.zeros(texture.shape[:2], np.uint8)
    cv2.fillPoly(cheeks, [_grown(uv[list(mesh.FACE_OVAL)], oval)], 255)
    features = (
        (mesh.RIGHT_EYE, 2.2),
        (mesh.LEFT_EYE, 2.2),
        (mesh.RIGHT_BROW, 1.6),
        (mesh.LEFT_BROW, 1.6),
        (mesh.OUTER_LIPS, 1.4),
        (mesh.NOSE, 1.3),
    )
    for ring, factor in features:
        cv2.fillPoly(cheeks, [_grown(uv[list(ring)], factor)], 0)
    return texture, uv, cheeks


@pytest.mark.parametrize("flip", [False, True], ids=["turned", "turned-mirrored"])
def test_turned_photo_cheeks_are_skin_not_pieces(analyzer: FaceAnalyzer, flip: bool) -> None:
    """The hidden cheek of portrait_woman_pose.jpg (a hand at the chin, hair past the far
    contour): no grey or dark pieces of hair mirrored onto the cheeks (was 3-4% of them)."""
    texture, _, cheeks = _pose_cheeks(analyzer, flip, 0.9)
    used = (texture[..., 3] > 127) & (cheeks > 0)
    chroma = cv2.cvtColor(texture[..., :3], cv2.COLOR_BGR2YCrCb)[..., 1:].astype(np.float32)
    skin = np.median(chroma[used], axis=0)
    off_skin = float((np.linalg.norm(chroma - skin, axis=2)[used] > 16).mean())
    assert off_skin < 0.01, off_skin


def test_relight_gain_is_eased_across_frames(analyzer: FaceAnalyzer) -> None:
    """A lamp switched on at one side: the swapped face's light follows over a few
    frames (no jump), and the gain field follows a face that changes size."""
    frame = _frames(1)[0]
    points = analyzer.analyze(frame, refine=True)[0].points
    x0, y0, x1, y1 = crop_box(points, 0, frame.shape)
    roi = np.ascontiguousarray(frame[y0:y1, x0:x1])
    mask = face_mask(frame.shape, points)[y0:y1, x0:x1]
    ramp = np.linspace(0.4, 1.0, roi.shape[1], dtype=np.float32)[None, :, None]
    lamp = np.clip(roi * ramp, 0, 255).astype(np.uint8)
    face_px = float(y1 - y0)
    memory = ColourMemory()
    even = relight.shading_gain(roi, roi, mask, face_px, memory.ease_shading)
    eased = relight.shading_gain(roi, lamp, mask, face_px, memory.ease_shading)
    at_once = relight.shading_gain(roi, lamp, mask, face_px)
    assert even is not None and eased is not None and at_once is not None
    inside = mask > 127
    step = float(np.abs(at_once - even)[inside].mean())
    assert step > 0.1  # the lamp changes the light a lot
    moved = float(np.abs(eased - even)[inside].mean())
    assert moved == pytest.approx(memory.rate * step, rel=0.1)  # a share of the way only
    small = np.asarray(cv2.resize(roi, None, fx=0.5, fy=0.5), np.uint8)
    size = (small.shape[1], small.shape[0])
    half = np.asarray(cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST), np.uint8)
    assert relight.shading_gain(small, small, half, face_px / 2, memory.ease_shading) is not None


def test_a_closing_eye_flattens_the_drawn_iris(
    analyzer: FaceAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half-closed lids: the drawn iris is squashed across the eye (as a closing eye
    looks), not a full disc showing through the slit (that read as an open eye)."""
    identity = enroll(read_image(shared_media("portrait_woman_outdoor.jpg")), analyzer)
    assert identity.irises is not None and identity.completed is not None
    local = identity.completed.uv.astype(np.float32).copy()
    for ring in (RIGHT_EYE, LEFT_EYE):  # the lids closed to 0.4 of the gap, about its middle
        middle = local[list(ring), 1].mean()
        local[list(ring), 1] = middle + (local[list(ring), 1] - middle) * 0.4
    bare = identity.completed.texture_bgra[..., :3]

    def painted(squash_min: float) -> int:
        monkeypatch.setattr(gaze, "SQUASH_MIN", squash_min)
        out = np.ascontiguousarray(bare.copy())
        gaze.draw_irises(out, local, identity.irises)  # type: ignore[arg-type]
        return int((np.abs(out.astype(int) - bare.astype(int)).sum(axis=2) > 30).sum())

    flat, disc = painted(0.15), painted(1.0)
    assert flat < 0.85 * disc, (flat, disc)


def test_the_cut_iris_keeps_the_identitys_own_lid(analyzer: FaceAnalyzer) -> None:
    """Einstein's heavy upper lids cover the top of his irises: the cut iris keeps that lid
    (a full round disc filled in under it read as another, staring face: d_src 0.52)."""
    identity = enroll(read_image(shared_media("portrait_einstein_bw.jpg")), analyzer)
    assert identity.irises is not None
    for patch, (ring, _, _, iris) in zip(identity.irises, gaze.EYES, strict=True):
        assert patch is not None
        half = (patch.image.shape[0] - 1) // 2
        centre = identity.points[iris[0], :2].astype(np.float64)
        shift = np.array([[1.0, 0.0, half - centre[0]], [0.0, 1.0, half - centre[1]]])
        side = patch.image.shape[0]
        photo = cv2.warpAffine(identity.texture, shift, (side, side), flags=cv2.INTER_LINEAR)
        corner = (centre - half).astype(np.float32)
        opening = gaze._opening(identity.points[list(ring), :2], (side, side), corner)
        inner = cv2.erode(opening, np.ones((3, 3), np.uint8))
        lid = (patch.image[..., 3] > 127) & (inner < 128)  # the disc at and under the lid
        assert lid.sum() >= 10, lid.sum()
        drawn = patch.image[..., :3][lid].astype(np.float32)
        assert np.abs(drawn - photo[lid].astype(np.float32)).mean() < 2.0


@pytest.mark.parametrize(
    ("name", "most"),
    [("portrait_einstein_bw.jpg", 0.08), ("portrait_dylan_bw.jpg", 0.01)],
)
def test_nearly_frontal_photo_keeps_its_own_features(
    analyzer: FaceAnalyzer, name: str, most: float
) -> None:
    """A photo turned by a few degrees only sees every triangle well: it keeps its own,
    asymmetric features; only the strip it sees poorly at the far contour comes from the
    mirror side (Einstein: 19% of the face was mirrored, his nose shadow on both sides,
    and read as someone else: d_src 0.507)."""
    identity = enroll(read_image(shared_media(name)), analyzer)
    assert identity.completed is not None
    share = identity.completed.mirrored
    assert float(share.mean()) < most, float(share.mean())
    own = symmetry.photo_visibility(identity.points, identity.triangles, MAX_TEXTURE_SIDE)
    assert float(share[own >= symmetry.SEEN_POORLY[1]].max(initial=0.0)) == 0.0


@pytest.mark.parametrize("flip", [False, True], ids=["turned", "turned-mirrored"])
def test_turned_photo_far_cheek_has_no_streaks(analyzer: FaceAnalyzer, flip: bool) -> None:
    """portrait_woman_pose.jpg's far cheek, which the photo sees poorly: her hand at the
    chin there and the hair and ear at the mirror side's contour are not carried onto it
    as streaks (their edges: the far cheek's strongest gradients 1.17-1.27x the near
    cheek's; now no stronger than the near cheek's)."""
    texture, uv, cheeks = _pose_cheeks(analyzer, flip, 1.0)
    opaque = cv2.erode((texture[..., 3] > 127).astype(np.uint8), np.ones((5, 5), np.uint8))
    used = (opaque > 0) & (cheeks > 0)
    grey = cv2.cvtColor(texture[..., :3], cv2.COLOR_BGR2GRAY).astype(np.float32)
    gradient = np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1))
    left = np.arange(texture.shape[1])[None, :] < uv[1, 0]  # left of the nose tip
    far, near = (used & left, used & ~left) if not flip else (used & ~left, used & left)
    strongest = [float(np.percentile(gradient[side], 95)) for side in (far, near)]
    assert strongest[0] <= 1.05 * strongest[1], strongest


@pytest.mark.parametrize(
    ("name", "most"),
    [("portrait_einstein_bw.jpg", (18.3, 14.3)), ("portrait_woman_outdoor.jpg", (6.0, 8.5))],
)
def test_drawn_iris_at_the_photos_gaze_looks_like_the_photo(
    analyzer: FaceAnalyzer, name: str, most: tuple[float, float]
) -> None:
    """The bare eye with the cut iris drawn back where the photo had it is close to the
    photo's own eye (mean grey-level difference over the eye opening). Cut at the mesh's
    iris ring, the drawn iris was smaller than the photo's, in a halo of painted eye white
    (Einstein 19.0 / 15.4, outdoor 7.1 / 10.0; now 17.5 / 13.0 and 5.1 / 7.6): a
    staring look, d_src 0.500 against 0.475 with the photo's own eyes."""
    identity = enroll(read_image(shared_media(name)), analyzer)
    assert identity.completed is not None and identity.irises is not None
    uv = identity.completed.uv
    opaque = np.full(identity.texture.shape[:2], 255, np.uint8)
    photo = symmetry.complete(
        np.dstack([identity.texture, opaque]), identity.points, identity.triangles, 512
    ).texture_bgra[..., :3]
    drawn = np.ascontiguousarray(identity.completed.texture_bgra[..., :3])
    gaze.draw_irises(drawn, uv, identity.irises)
    for (ring, _, _, _), limit in zip(gaze.EYES, most, strict=True):
        opening = np.zeros(drawn.shape[:2], np.uint8)
        cv2.fillPoly(opening, [np.round(uv[list(ring), :2]).astype(np.int32)], 255)
        difference = np.abs(drawn.astype(np.float32) - photo.astype(np.float32))
        assert float(difference[opening > 0].mean()) < limit


TURNED_FRAME = 265  # expressive_woman.mp4: turned 22 degrees, the far cheek narrow


@pytest.mark.parametrize("flip", [False, True], ids=["turned", "turned-mirrored"])
def test_turned_photo_far_side_is_filled_from_the_near_side(
    analyzer: FaceAnalyzer, flip: bool
) -> None:
    """The far side of a turned photo is drawn from its near side, mirrored: whole and of
    the near side's colour. (The mirrored samples once came from the partner triangle's
    map evaluated at this triangle's place, not flipped: off the photo or on the wall,
    refused as not skin; half the face showed the visitor's own.)"""
    photo = media_frames("expressive_woman.mp4", TURNED_FRAME + 1)[TURNED_FRAME]
    if flip:
        photo = np.ascontiguousarray(photo[:, ::-1])
    identity = enroll(photo, analyzer)
    done = identity.completed
    assert done is not None and abs(yaw_degrees_of(identity.points)) > 15
    tex = done.texture_bgra
    ids = symmetry.triangle_ids(done.uv, identity.triangles, (tex.shape[1], tex.shape[0]))
    far_tris = done.mirrored > 0.5
    far = (ids > 0) & far_tris[np.maximum(ids - 1, 0)]
    near = (ids > 0) & (done.mirrored < 0.05)[np.maximum(ids - 1, 0)] & (tex[..., 3] > 200)
    assert far.mean() > 0.05  # a good part of the face is filled
    assert float(tex[..., 3][far].mean()) > 0.7 * 255  # whole (was 0.35): not the visitor's own
    lab = cv2.cvtColor(np.ascontiguousarray(tex[..., :3]), cv2.COLOR_BGR2LAB).astype(np.float32)
    shown = tex[..., 3] > 128
    far_ab = np.median(lab[far & shown][:, 1:], axis=0)
    near_ab = np.median(lab[near][:, 1:], axis=0)
    assert float(np.linalg.norm(far_ab - near_ab)) < 4.0, (far_ab, near_ab)
