"""The ``result`` check: an identity photo graded by what its swap shows on the demo faces.

Real models, real photos: the identity is enrolled and swapped onto the upload's
demo views (the astronaut and Grace Hopper, frontal and redrawn turned both
ways) by the enroller's own processor, and each render is measured. Photos:
the embedded Grace Hopper (always present), the shared portraits and frame 265
of ``expressive_woman.mp4`` (turned 22°; ../shared/media, skipped when absent),
and identities made worse by hand: half the texture transparent (a half-face:
the visitor's own skin shows), half of it darker (a seam down the face).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from flask.testing import FlaskClient

from appliance.config import Settings
from appliance.control.enrollment import PREVIEW_GAP, PREVIEW_HEIGHT, Enroller
from appliance.eval.coverage import coverage
from appliance.eval.photo_grade import (
    MAX_FILL_STEP,
    MIN_COVERAGE,
    NOT_SHOWN,
    PhotoGrader,
    RenderFigures,
    verdict,
)
from appliance.modelstore import ModelStore
from appliance.vision.identity import Identity, enroll
from appliance.vision.photo_measures import head_pose
from tests.conftest import shared_media
from tests.test_cli import assert_one_line_error, mirror
from tests.test_identity_check import video_frame
from tests.test_web_identities import upload
from tests.test_web_support import Mirror, encode, photo, post


@dataclasses.dataclass
class Graded:
    enroller: Enroller
    grader: PhotoGrader


@pytest.fixture(scope="module")
def graded(store: ModelStore) -> Graded:
    enroller = Enroller.from_store(Settings(), store)
    return Graded(enroller, PhotoGrader.attach(enroller))


def identity_of(graded: Graded, image: np.ndarray) -> Identity:
    return enroll(image, graded.enroller.analyzer, "test")


def half(identity: Identity, *, alpha: int | None = None, light: float = 1.0) -> Identity:
    """``identity`` with the texture of the person's left half (right of the nose in the
    texture) made transparent (``alpha``) or darker (``light``)."""
    assert identity.texture_bgra is not None and identity.completed is not None
    texture = identity.texture_bgra.copy()
    middle = float(identity.texture_points[[1, 4, 6, 168], 0].mean())
    part = np.arange(texture.shape[1]) > middle
    if alpha is not None:
        texture[:, part, 3] = alpha
    lit = texture[:, part, :3].astype(np.float32) * light
    texture[:, part, :3] = lit.clip(0, 255).astype(np.uint8)
    completed = dataclasses.replace(identity.completed, texture_bgra=texture)
    return dataclasses.replace(identity, texture_bgra=texture, completed=completed)


def half_darker_photo(graded: Graded, image: np.ndarray, light: float) -> np.ndarray:
    """``image`` with everything right of the nose ``light`` times as bright (a hard edge
    down the face: every check of the photo itself still says good)."""
    nose = graded.enroller.analyzer.analyze(image, refine=True)[0].points[[1, 4, 6, 168], 0]
    out = image.copy()
    column = int(nose.mean())
    out[:, column:] = (out[:, column:].astype(np.float32) * light).astype(np.uint8)
    return out


def frontal(figures: list[RenderFigures]) -> list[RenderFigures]:
    return [f for f in figures if f.frontal]


# ---- the demo views ------------------------------------------------------------------------


def test_the_demo_views_are_each_photo_frontal_and_turned_both_ways(graded: Graded) -> None:
    views = graded.enroller.views
    assert [v.name for v in views] == [
        "astronaut", "astronaut turned -30°", "astronaut turned +30°",
        "grace_hopper", "grace_hopper turned -30°", "grace_hopper turned +30°",
    ]  # fmt: skip
    for view in views:
        (face,) = graded.enroller.analyzer.analyze(view.image, refine=True)
        yaw = head_pose(face.points).yaw
        if view.frontal:
            assert abs(yaw) < 3, (view.name, yaw)
        else:  # asked for 30°, the landmarker reads 8-17°: still a clearly turned visitor
            assert 5 < abs(yaw) < 25, (view.name, yaw)
            assert np.sign(yaw) == -np.sign(view.turn), (view.name, yaw)


# ---- good photos ---------------------------------------------------------------------------


def test_a_frontal_photo_is_good_on_every_render(graded: Graded, grace_hopper: np.ndarray) -> None:
    result = graded.grader.grade(identity_of(graded, grace_hopper))
    figures = graded.grader.last
    assert result.finding.check == "result"
    assert result.finding.verdict == "good", [f.as_dict() for f in figures]
    assert len(result.images) == len(figures) == 6
    for render in figures:
        assert render.swapped and render.problems() == [], render.as_dict()
        assert render.coverage is not None and render.coverage > MIN_COVERAGE
        assert render.fill_step is not None and render.fill_step < MAX_FILL_STEP
        assert render.stretch is not None and render.shading is not None
    for view, image in zip(graded.enroller.views, result.images, strict=True):
        assert image.shape == view.image.shape
        assert float(np.abs(image.astype(int) - view.image.astype(int)).mean()) > 1.0  # swapped
    assert result.measures["result_coverage_frontal"] > MIN_COVERAGE
    assert set(result.measures) >= {"result_fill_step_turned", "result_stretch_turned"}


@pytest.mark.parametrize(
    "name", ["portrait_dylan_bw.jpg", "portrait_einstein_bw.jpg", "portrait_man_mouth_open.jpg"]
)
def test_frontal_shared_portraits_are_good(graded: Graded, name: str) -> None:
    image = cv2.imread(str(shared_media(name)))
    result = graded.grader.grade(identity_of(graded, image))
    assert result.finding.verdict == "good", [f.as_dict() for f in graded.grader.last]


# ---- identities made worse by hand ---------------------------------------------------------


def test_half_the_face_transparent_is_refused_as_the_visitors_own_skin(
    graded: Graded, grace_hopper: np.ndarray
) -> None:
    identity = identity_of(graded, grace_hopper)
    result = graded.grader.grade(half(identity, alpha=0))
    figures = graded.grader.last
    for render in frontal(figures):
        assert render.coverage is not None and 0.35 < render.coverage < 0.65, render.as_dict()
        # the colour line the fill step looks for is not there: the visitor's own half
        # meets the identity's without one
        assert render.fill_step is not None and render.fill_step < MAX_FILL_STEP
    assert result.finding.verdict == "refused"
    assert "even on visitors facing the camera" in result.finding.message
    assert "the visitor's own skin" in result.finding.message
    # the same photo untouched: the identity covers the whole face
    drawn = graded.grader.render(identity)[1]
    assert all(f.coverage is not None and f.coverage > MIN_COVERAGE for f in drawn)


def test_coverage_is_the_share_of_the_drawn_face_the_identity_covers(
    graded: Graded, grace_hopper: np.ndarray
) -> None:
    identity = identity_of(graded, grace_hopper)
    mesh = identity.points  # drawn where it was photographed
    assert coverage(identity, mesh) == pytest.approx(1.0, abs=0.01)
    assert coverage(half(identity, alpha=0), mesh) == pytest.approx(0.5, abs=0.1)
    assert coverage(half(identity, alpha=100), mesh) == pytest.approx(0.5, abs=0.1)  # mostly
    assert coverage(half(identity, alpha=200), mesh) == pytest.approx(1.0, abs=0.01)
    assert coverage(identity, mesh * 0.01) is None  # too small to measure


def test_the_turned_photo_half_transparent_is_refused(graded: Graded) -> None:
    turned = identity_of(graded, video_frame("expressive_woman.mp4", 265))
    result = graded.grader.grade(half(turned, alpha=0))
    assert result.finding.verdict == "refused", [f.as_dict() for f in graded.grader.last]
    assert "the visitor's own skin" in result.finding.message


def test_half_the_face_darker_is_refused_as_a_seam(
    graded: Graded, grace_hopper: np.ndarray
) -> None:
    result = graded.grader.grade(half(identity_of(graded, grace_hopper), light=0.7))
    for render in frontal(graded.grader.last):
        assert render.fill_step is not None and render.fill_step > MAX_FILL_STEP
        assert render.coverage is not None and render.coverage > MIN_COVERAGE
    assert result.finding.verdict == "refused"
    assert "a visible seam down the face" in result.finding.message


# ---- the turned photo ----------------------------------------------------------------------


def test_the_turned_photo_warns_of_the_visitors_skin_on_turned_visitors(graded: Graded) -> None:
    """Frame 265 of expressive_woman.mp4 (turned 22°): hair over her near temple and the
    completed far side leave holes that show the visitor's own face (Grace Hopper's
    glasses beside the eye) on the turned demo faces; the frontal ones look right."""
    turned = identity_of(graded, video_frame("expressive_woman.mp4", 265))
    result = graded.grader.grade(turned)
    figures = graded.grader.last
    assert all(f.problems() == [] for f in frontal(figures)), [f.as_dict() for f in figures]
    assert result.finding.verdict == "usable"
    assert result.finding.message.startswith("on turned visitors, part of the face would show")
    assert "(see the previews)" in result.finding.message


# ---- the verdict's words -------------------------------------------------------------------


def render(view: str, *, turned: bool = False, **figures: float) -> RenderFigures:
    base = {"stretch": 1.5, "fill_step": 0.0, "coverage": 1.0, "shading": 0.02}
    return RenderFigures(view, not turned, True, **{**base, **figures})


def test_the_verdict_names_what_shows_and_where() -> None:
    calm = [render("a"), render("a turned", turned=True), render("b")]
    assert verdict(calm).verdict == "good"
    cheek = verdict([*calm, render("b turned", turned=True, stretch=3.8)])
    assert cheek.verdict == "usable"
    assert cheek.message.startswith("on turned visitors, the far cheek is stretched")
    # a turned visitor stretches a frontal photo's cheek a little: not worth a word
    assert verdict([*calm, render("b turned", turned=True, stretch=3.2)]).verdict == "good"
    one = verdict([render("a", fill_step=5.0), render("b"), render("a turned", turned=True)])
    assert one.verdict == "usable" and one.message.startswith("on some visitors, a visible seam")
    every = verdict([render("a", stretch=3.3, coverage=0.5), render("b", stretch=3.4)])
    assert every.verdict == "refused"
    assert every.message.startswith("even on visitors facing the camera, the face is stretched")
    assert "skin" not in every.message  # on one frontal render only
    nothing = verdict([RenderFigures("a", True, False), RenderFigures("b", True, False)])
    assert (nothing.verdict, nothing.message) == ("usable", NOT_SHOWN)


# ---- the command ---------------------------------------------------------------------------


def test_cli_check_grades_the_swap_and_writes_its_previews(tmp_path: Path) -> None:
    out = tmp_path / "previews.jpg"
    proc = mirror("identity", "check", "grace_hopper", "--preview", out)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].endswith(": good") and len(lines) == 14
    assert (
        lines[-1]
        == "  good     on the demo faces: the swap looks right, facing the camera and turned"
    )
    sheet = cv2.imread(str(out))
    assert sheet is not None
    assert sheet.shape[0] == 2 * PREVIEW_HEIGHT + PREVIEW_GAP  # a row per demo photo
    assert sheet.shape[1] == 3 * PREVIEW_HEIGHT + 2 * PREVIEW_GAP  # astronaut: square, 3 views

    proc = mirror("identity", "check", "grace_hopper", "--json")
    report = json.loads(proc.stdout)
    (result,) = [c for c in report["checks"] if c["check"] == "result"]
    assert result["verdict"] == "good"
    assert [r["view"] for r in report["renders"]][::3] == ["astronaut", "grace_hopper"]
    assert all(r["swapped"] and r["problems"] == [] for r in report["renders"])
    assert report["measures"]["result_coverage_turned"] > MIN_COVERAGE


def test_cli_check_refuses_a_photo_whose_swap_shows_a_seam(
    tmp_path: Path, graded: Graded, grace_hopper: np.ndarray
) -> None:
    photo_path = tmp_path / "half_dark.png"
    cv2.imwrite(str(photo_path), half_darker_photo(graded, grace_hopper, 0.7))
    proc = mirror("identity", "check", photo_path, "--json")
    assert proc.returncode == 1
    assert_one_line_error(proc, "refused", "a visible seam down the face")
    report = json.loads(proc.stdout)
    verdicts = {c["check"]: c["verdict"] for c in report["checks"]}
    # the photo by itself looks fine: only what the swap makes of it is refused
    assert verdicts.pop("result") == "refused"
    assert set(verdicts.values()) == {"good"}
    proc = mirror("identity", "check", photo_path)
    assert "refused  on the demo faces: even on visitors facing the camera" in proc.stdout


# ---- the admin page's upload ---------------------------------------------------------------


def test_an_upload_with_a_seam_on_turned_visitors_is_kept_with_a_warning_and_previews(
    client: FlaskClient, mirror: Mirror, graded: Graded
) -> None:
    image = half_darker_photo(graded, photo("grace_hopper"), 0.85)
    response = upload(client, encode(image), name="Halfdark")
    assert response.status_code == 302
    page = client.get(response.location).text
    assert "Added Halfdark: usable; a better photo would look more natural (see below)." in page
    added = page[page.index('id="added"') :]
    assert "on the demo faces, frontal and turned" in added
    warning = '<p class="flash info hint" role="status">On turned visitors, a visible seam'
    assert warning in added
    assert added.index(warning) < added.index('src="/identities/Halfdark/preview.jpg"')
    assert mirror.library.names() == ["Halfdark"]
    preview = client.get("/identities/Halfdark/preview.jpg")
    sheet = cv2.imdecode(np.frombuffer(preview.data, np.uint8), cv2.IMREAD_COLOR)
    assert sheet.shape[0] == 2 * PREVIEW_HEIGHT + PREVIEW_GAP  # frontal and turned renders


def test_an_upload_whose_swap_shows_a_seam_on_every_visitor_is_refused(
    client: FlaskClient, mirror: Mirror, graded: Graded
) -> None:
    image = half_darker_photo(graded, photo("grace_hopper"), 0.7)
    data = {"name": "Dark", "photo": (io.BytesIO(encode(image)), "dark.jpg", "image/jpeg")}
    response = post(client, "/identities", data)
    assert response.status_code == 400
    assert "Even on visitors facing the camera, a visible seam down the face" in response.text
    assert mirror.library.names() == []


def test_cli_check_a_blurred_photo_is_a_hint_not_a_face_left_out(
    tmp_path: Path, grace_hopper: np.ndarray
) -> None:
    """Blurred this much, the face parser finds no skin in the photo (the identity's
    texture came out transparent: the swap left the visitor's own face, and the grade
    refused it); the parser is not believed there, so the blur is a hint and the
    renders are whole."""
    photo_path = tmp_path / "blurred.jpg"
    cv2.imwrite(str(photo_path), cv2.GaussianBlur(grace_hopper, (0, 0), 6))
    proc = mirror("identity", "check", photo_path, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    verdicts = {c["check"]: c["verdict"] for c in report["checks"]}
    assert verdicts["sharpness"] == "usable" and verdicts["result"] != "refused"
    assert all(r["coverage"] > 0.9 and r["swapped"] for r in report["renders"])
