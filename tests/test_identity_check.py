"""Identity photo assessment: `mirror identity check` and the checker behind the upload.

Real models on real photos: the embedded astronaut and Grace Hopper photos
(always present) and versions of them made worse in one way each (blurred,
darkened, overexposed, lit from one side, covered by a phone, tilted, shrunk,
two people); then every shared portrait, the dog and the cat, the shared
turned portrait mirrored and cropped (the yaw's sign), a turned video frame
and a blink (../shared/media, skipped when absent).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from flask.testing import FlaskClient

from appliance.config import Settings
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer
from appliance.vision.identity_check import Assessment, IdentityChecker
from tests.conftest import shared_media
from tests.test_cli import assert_one_line_error, mirror
from tests.test_web_identities import post
from tests.test_web_support import Mirror, encode, photo, two_faces


@pytest.fixture(scope="module")
def checker(store: ModelStore) -> IdentityChecker:
    return IdentityChecker.for_analyzer(build_analyzer(Settings(), store), store)


def verdicts(assessment: Assessment) -> dict[str, str]:
    return {f.check: f.verdict for f in assessment.findings}


def only_hints(assessment: Assessment) -> set[str]:
    return {f.check for f in assessment.findings if f.verdict == "usable"}


def face_box(checker: IdentityChecker, image: np.ndarray) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = checker.analyzer.analyze(image)[0].box()
    return int(x0), int(y0), int(x1), int(y1)


# ---- the embedded photos and worse versions of them -----------------------------------------


@pytest.mark.parametrize("name", ["astronaut", "grace_hopper"])
def test_the_embedded_photos_are_good_on_every_check(
    checker: IdentityChecker, store: ModelStore, name: str
) -> None:
    image = cv2.imread(str(store.path(name)))
    result = checker.assess(image)
    assert result.verdict == "good", result.as_dict()
    assert set(verdicts(result)) == {
        "faces", "size", "yaw", "pitch", "roll", "eyes", "mouth", "expression",
        "sharpness", "exposure", "lighting", "occlusion",
    }  # fmt: skip
    assert result.hints() == []
    assert abs(result.measures["yaw_deg"]) < 4
    assert abs(result.measures["roll_deg"]) < 5


def test_a_blurred_photo_is_usable_with_a_sharpness_hint(
    checker: IdentityChecker, grace_hopper: np.ndarray
) -> None:
    result = checker.assess(cv2.GaussianBlur(grace_hopper, (0, 0), 6))
    assert result.verdict == "usable"
    assert only_hints(result) == {"sharpness"}
    assert "blurred" in result.hints()[0]
    # a light softening is not worth a word
    assert checker.assess(cv2.GaussianBlur(grace_hopper, (0, 0), 1.5)).verdict == "good"


def test_too_dark_and_too_bright_photos_get_an_exposure_hint(
    checker: IdentityChecker, grace_hopper: np.ndarray
) -> None:
    dark = checker.assess((grace_hopper * 0.25).astype(np.uint8))
    assert "exposure" in only_hints(dark)
    assert any("too dark" in h for h in dark.hints())
    bright = np.clip(grace_hopper.astype(np.int32) * 2 + 60, 0, 255).astype(np.uint8)
    result = checker.assess(bright)
    assert "exposure" in only_hints(result)
    assert any("too bright" in h for h in result.hints())
    assert not result.refused


def test_light_from_one_side_gets_a_lighting_hint_naming_the_dark_side(
    checker: IdentityChecker, grace_hopper: np.ndarray
) -> None:
    x0, _, x1, _ = face_box(checker, grace_hopper)
    # darker towards the left of the photo: the person's right side
    gain = np.clip((np.arange(grace_hopper.shape[1]) - x0) / max(1, x1 - x0), 0, 1) * 0.8 + 0.2
    side_lit = (grace_hopper * gain[None, :, None]).astype(np.uint8)
    result = checker.assess(side_lit)
    assert only_hints(result) >= {"lighting"}
    (hint,) = [f.message for f in result.findings if f.check == "lighting"]
    assert "the person's right side of the face" in hint
    flipped = checker.assess(cv2.flip(side_lit, 1))
    (hint,) = [f.message for f in flipped.findings if f.check == "lighting"]
    assert "the person's left side of the face" in hint


def test_a_phone_in_front_of_the_face_gets_an_occlusion_hint(
    checker: IdentityChecker, grace_hopper: np.ndarray
) -> None:
    x0, y0, x1, y1 = face_box(checker, grace_hopper)
    covered = grace_hopper.copy()  # a dark blue phone from below over a third of the lower face
    covered[y0 + (y1 - y0) // 2 : y1 + 30, max(0, x0 - 40) : x0 + (x1 - x0) // 3] = (140, 80, 30)
    result = checker.assess(covered)
    assert "occlusion" in only_hints(result)
    assert result.measures["covered"] > 0.08
    assert any("covered" in h for h in result.hints())


def test_a_tilted_head_gets_a_tilt_hint(checker: IdentityChecker, grace_hopper: np.ndarray) -> None:
    h, w = grace_hopper.shape[:2]
    x0, y0, x1, y1 = face_box(checker, grace_hopper)
    turn = cv2.getRotationMatrix2D(((x0 + x1) / 2, (y0 + y1) / 2), 30, 1.0)  # anticlockwise
    tilted = cv2.warpAffine(grace_hopper, turn, (w, h), borderMode=cv2.BORDER_REPLICATE)
    result = checker.assess(tilted)
    assert "roll" in only_hints(result)
    # anticlockwise in the photo: the person's left (photo right) eye goes up
    assert result.measures["roll_deg"] == pytest.approx(-30 - 3, abs=5)


def test_a_small_face_is_usable_and_a_tiny_one_refused(
    checker: IdentityChecker, grace_hopper: np.ndarray
) -> None:
    def shrunk(eyes_px: float) -> np.ndarray:
        scale = eyes_px / 115  # Grace Hopper: 115 px between the eyes
        small = cv2.resize(grace_hopper, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        canvas = np.full((400, 400, 3), 128, np.uint8)  # the detector needs some context
        canvas[: small.shape[0], : small.shape[1]] = small
        return canvas

    small = checker.assess(shrunk(40))
    assert verdicts(small)["size"] == "usable"
    assert not small.refused
    tiny = checker.assess(shrunk(18))
    if tiny.faces:  # found at all: refused for its size
        assert verdicts(tiny)["size"] == "refused"
        assert "too small" in tiny.reasons()[0]
    assert tiny.refused


def test_no_face_and_two_faces_are_refused(
    checker: IdentityChecker,
) -> None:
    blank = checker.assess(np.full((480, 640, 3), 120, np.uint8))
    assert blank.refused and blank.faces == 0
    assert "no face" in blank.reasons()[0]
    both = checker.assess(two_faces())
    assert both.refused and both.faces == 2
    assert "more than one face (2)" in both.reasons()[0]


# ---- the shared portraits, animals, turned and blinking faces -------------------------------

EXPECTED = {
    "portrait_dylan_bw.jpg": ("good", set()),
    "portrait_woman_outdoor.jpg": ("good", set()),
    "painting_seated_woman.jpg": ("good", set()),
    "attack_photo_in_hand.jpg": ("good", set()),  # a real face; liveness is another check
    "portrait_einstein_bw.jpg": ("usable", {"lighting", "yaw"}),
    "portrait_man_mouth_open.jpg": ("usable", {"mouth"}),
    "portrait_woman_pose.jpg": ("usable", {"yaw", "occlusion"}),  # her hand at her cheek
    "negative_dog.jpg": ("refused", set()),
    "negative_cat.jpg": ("refused", set()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_shared_photo_gets_the_right_verdict(checker: IdentityChecker, name: str) -> None:
    image = cv2.imread(str(shared_media(name)))
    result = checker.assess(image)
    verdict, hints = EXPECTED[name]
    assert (result.verdict, only_hints(result)) == (verdict, hints), result.as_dict()
    if verdict == "refused":
        assert result.faces == 0 and "no face" in result.reasons()[0]


@pytest.mark.parametrize("flip", [False, True], ids=["photo", "mirrored"])
def test_a_hand_at_the_cheek_gets_a_hint_of_its_own(checker: IdentityChecker, flip: bool) -> None:
    """portrait_woman_pose.jpg's hand has her skin's colour: the occluder test finds
    nothing (it said "nothing covers the face"); the hand models find it by its shape."""
    pose = cv2.imread(str(shared_media("portrait_woman_pose.jpg")))
    result = checker.assess(cv2.flip(pose, 1) if flip else pose)
    assert result.measures["covered"] < 0.01  # not seen as an occluder
    assert 0.04 < result.measures["hand_covered"] < 0.1, result.measures
    (finding,) = [f for f in result.findings if f.check == "occlusion"]
    assert finding.verdict == "usable" and finding.message.startswith("a hand covers about")


def test_the_turn_has_the_right_side_mirrored_and_cropped(checker: IdentityChecker) -> None:
    pose = cv2.imread(str(shared_media("portrait_woman_pose.jpg")))
    x0, y0, x1, y1 = face_box(checker, pose)
    crop = pose[max(0, y0 - 150) : y1 + 150, max(0, x0 - 150) : x1 + 150]
    found = {}
    for name, image in [
        ("photo", pose),
        ("mirrored", cv2.flip(pose, 1)),
        ("crop", crop),
        ("crop mirrored", cv2.flip(crop, 1)),
    ]:
        result = checker.assess(image)
        (finding,) = [f for f in result.findings if f.check == "yaw"]
        found[name] = finding
    # her nose points to the left of the photo: turned to her own right
    for name in ("photo", "crop"):
        assert found[name].value is not None and found[name].value < -8
        assert "turned" in found[name].message and "the person's right" in found[name].message
    for name in ("mirrored", "crop mirrored"):
        assert found[name].value is not None and found[name].value > 8
        assert "the person's left" in found[name].message
    for plain, flipped in (("photo", "mirrored"), ("crop", "crop mirrored")):
        assert abs(found[plain].value + found[flipped].value) < 3  # type: ignore[operator]


def video_frame(name: str, index: int) -> np.ndarray:
    capture = cv2.VideoCapture(str(shared_media(name)))
    try:
        for _ in range(index + 1):
            ok, frame = capture.read()
            assert ok, f"{name} has no frame {index}"
    finally:
        capture.release()
    return np.asarray(frame)


def test_a_strongly_turned_head_and_closed_eyes_get_hints(checker: IdentityChecker) -> None:
    turned = checker.assess(video_frame("expressive_woman.mp4", 260))  # 8.7 s: turning
    assert "yaw" in only_hints(turned)
    assert turned.measures["yaw_deg"] > 15
    assert any("to the person's left" in h for h in turned.hints())
    blink = checker.assess(video_frame("talking_man_greenscreen.mp4", 66))
    assert only_hints(blink) == {"eyes"}
    assert "eyes look closed" in blink.hints()[0]


# ---- the command ----------------------------------------------------------------------------


def test_cli_check_prints_every_check_and_exits_0(store: ModelStore) -> None:
    proc = mirror("identity", "check", "grace_hopper")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].endswith(": good")
    assert len(lines) == 14  # the verdict, 12 checks of the photo, the swap it makes
    assert any("head turn" in ln for ln in lines)
    assert "on the demo faces: the swap looks right" in lines[-1]
    proc = mirror("identity", "check", store.path("astronaut"), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "good" and report["faces"] == 1
    assert {c["check"] for c in report["checks"]} >= {"yaw", "eyes", "sharpness", "occlusion"}
    assert report["measures"]["eye_distance_px"] > 50


def test_cli_check_hint_is_exit_0_with_the_words(tmp_path: Path, grace_hopper: np.ndarray) -> None:
    # (a blurred photo is refused now: its texture comes out transparent, so its swap
    # shows the visitor's own face; tests/test_identity_grade.py)
    photo = tmp_path / "dark.jpg"
    cv2.imwrite(str(photo), (grace_hopper * 0.3).astype(np.uint8))
    proc = mirror("identity", "check", photo)
    assert proc.returncode == 0, proc.stderr
    assert "usable (1 hint)" in proc.stdout.splitlines()[0]
    assert "the face is too dark" in proc.stdout


def test_cli_check_refused_is_exit_1_with_one_error_line(tmp_path: Path) -> None:
    photo = tmp_path / "wall.png"
    cv2.imwrite(str(photo), np.full((480, 640, 3), 120, np.uint8))
    proc = mirror("identity", "check", photo)
    assert_one_line_error(proc, "refused", "no face")
    assert proc.returncode == 1
    assert "refused" in proc.stdout
    proc = mirror("identity", "check", photo, "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["verdict"] == "refused"


def test_cli_check_unreadable_input_is_one_error_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.jpg"
    text.write_text("not a photo")
    assert_one_line_error(mirror("identity", "check", text), "notes.jpg")
    assert_one_line_error(mirror("identity", "check", tmp_path / "gone.jpg"), "no such file")
    assert_one_line_error(mirror("identity", "check", tmp_path), "not a file")


# ---- the admin page's upload ----------------------------------------------------------------


def test_an_upload_shows_its_hints_and_previews_on_the_demo_faces(
    client: FlaskClient, mirror: Mirror
) -> None:
    dark = (photo("grace_hopper") * 0.3).astype(np.uint8)
    data = {"name": "Dim", "photo": (io.BytesIO(encode(dark)), "dim.jpg", "image/jpeg")}
    response = post(client, "/identities", data)
    assert response.status_code == 302
    page = client.get(response.location).text
    assert "Added Dim: usable; a better photo would look more natural (see below)." in page
    added = page[page.index('id="added"') :]
    assert '<p class="flash info hint" role="status">The face is too dark' in added
    assert "flash info hint" not in client.get(response.location).text  # shown once
    assert mirror.library.names() == ["Dim"]

    preview = client.get("/identities/Dim/preview.jpg")
    shown = cv2.imdecode(np.frombuffer(preview.data, np.uint8), cv2.IMREAD_COLOR)
    astronaut = cv2.resize(photo("astronaut"), (360, 360), interpolation=cv2.INTER_AREA)
    grace = photo("grace_hopper")
    grace = cv2.resize(grace, (round(512 * 360 / 600), 360), interpolation=cv2.INTER_AREA)
    # a row per demo photo: frontal, then turned both ways (the rows padded white)
    assert shown.shape == (360 + 8 + 360, 3 * 360 + 2 * 8, 3)
    frontal = ((astronaut, shown[:360, :360]), (grace, shown[368:, : grace.shape[1]]))
    for demo, part in frontal:
        # each demo face is there, and swapped (its face changed, the rest kept)
        change = np.abs(part.astype(int) - demo.astype(int)).mean(axis=2)
        assert float(change.mean()) > 1.0
        assert float(np.median(change)) < 6

    good = {"name": "Grace", "photo": (io.BytesIO(encode(photo("grace_hopper"))), "g.jpg")}
    page = client.get(post(client, "/identities", good).location).text
    assert "Added Grace: a good photo; this is how it looks on the demo faces." in page
    assert "flash info hint" not in page


def test_an_upload_the_check_refuses_is_not_stored(client: FlaskClient, mirror: Mirror) -> None:
    tiny = cv2.resize(photo("grace_hopper"), None, fx=0.17, fy=0.17, interpolation=cv2.INTER_AREA)
    canvas = np.full((400, 400, 3), 128, np.uint8)
    canvas[: tiny.shape[0], : tiny.shape[1]] = tiny
    data = {"name": "Tiny", "photo": (io.BytesIO(encode(canvas)), "tiny.jpg", "image/jpeg")}
    response = post(client, "/identities", data)
    assert response.status_code == 400
    assert "The face is too small" in response.text or "No face found" in response.text
    assert mirror.library.names() == []


def test_a_strong_frown_gets_a_hint(checker: IdentityChecker) -> None:
    """The swap takes a smile or raised brows out of the identity's shape, not a lowered
    brow (it is how many people look): a strong frown is named instead."""
    frown = checker.assess(video_frame("expressive_woman.mp4", 265))
    (finding,) = [f for f in frown.findings if f.check == "expression"]
    assert finding.verdict == "usable" and "frown" in finding.message
    assert frown.measures["frown"] > 0.6
    man = checker.assess(cv2.imread(str(shared_media("portrait_man_mouth_open.jpg"))))
    assert "expression" not in only_hints(man)  # brows low (0.53), not a frown to name
