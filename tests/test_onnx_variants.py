"""ONNX variants of the embedded models: equal to LiteRT on real photos, verified, made once.

Boxes, keypoints and landmarks are compared in image pixels, within 1e-3
relative (plus 1e-3 px absolute for coordinates near zero). Int8 variants are
kept only under 1 px of error; either way the record says what was measured.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.cli.main import main
from appliance.errors import ModelError, ModelHashError, ModelMissingError
from appliance.inference.litert import LiteRTBackend
from appliance.inference.onnx_backend import OnnxBackend
from appliance.modelstore import ModelStore
from appliance.modelstore.onnx_variants import OnnxVariants
from appliance.tools import quantize as quantize_module
from appliance.tools.convert import CONVERTIBLE, convert_models
from appliance.tools.quantize import make_int8_variants
from appliance.tools.variant_check import (
    DETECTOR_KIND,
    Photo,
    detections,
    face_rois,
    mesh_points,
)
from tests.conftest import shared_media

RTOL = 1e-3
ATOL_PX = 1e-3
PORTRAITS = [
    "portrait_einstein_bw.jpg",
    "portrait_dylan_bw.jpg",
    "portrait_woman_outdoor.jpg",
    "portrait_man_mouth_open.jpg",
]
PHOTOS = ["astronaut", "grace_hopper", *PORTRAITS]


@pytest.fixture(scope="module")
def variants(store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> OnnxVariants:
    out = tmp_path_factory.mktemp("onnx")
    report = convert_models(store, out)
    assert report.converted == list(CONVERTIBLE)
    return OnnxVariants(store, out)


@pytest.fixture
def variants_copy(variants: OnnxVariants, tmp_path: Path) -> OnnxVariants:
    """A private copy that a test may damage."""
    target = tmp_path / "onnx"
    shutil.copytree(variants.directory, target)
    return OnnxVariants(variants.store, target)


def _photo(request: pytest.FixtureRequest, name: str) -> np.ndarray:
    if name in ("astronaut", "grace_hopper"):
        image: np.ndarray = request.getfixturevalue(name)
        return image
    image = cv2.imread(str(shared_media(name)), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def test_variants_keep_the_tflite_interface(store: ModelStore, variants: OnnxVariants) -> None:
    for name in CONVERTIBLE:
        litert = LiteRTBackend().load(store.path(name))
        onnx = OnnxBackend(("cpu",)).load(variants.path(name))
        assert onnx.inputs == litert.inputs
        assert onnx.outputs == litert.outputs


@pytest.mark.parametrize("photo", PHOTOS)
@pytest.mark.parametrize("model", ["face_detector_short", "face_detector_full"])
def test_detector_variant_equals_litert(
    store: ModelStore,
    variants: OnnxVariants,
    request: pytest.FixtureRequest,
    photo: str,
    model: str,
) -> None:
    kind = DETECTOR_KIND[model]
    image = _photo(request, photo)
    expected = detections(LiteRTBackend().load(store.path(model)), kind, image)
    actual = detections(OnnxBackend(("cpu",)).load(variants.path(model)), kind, image)
    assert len(expected) >= 1
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual, strict=True):
        np.testing.assert_allclose(got.box, want.box, rtol=RTOL, atol=ATOL_PX)
        np.testing.assert_allclose(got.keypoints, want.keypoints, rtol=RTOL, atol=ATOL_PX)
        np.testing.assert_allclose(got.score, want.score, rtol=RTOL)


@pytest.mark.parametrize("photo", PHOTOS)
def test_mesh_variant_equals_litert(
    store: ModelStore, variants: OnnxVariants, request: pytest.FixtureRequest, photo: str
) -> None:
    image = _photo(request, photo)
    detector = LiteRTBackend().load(store.path("face_detector_short"))
    [(_, roi)] = face_rois(detector, [Photo(photo, image)])
    expected = mesh_points(LiteRTBackend().load(store.path("face_landmarks_v1")), image, roi)
    actual = mesh_points(OnnxBackend(("cpu",)).load(variants.path("face_landmarks_v1")), image, roi)
    assert expected.shape == (468, 2)
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL_PX)


def test_converting_twice_converts_nothing(store: ModelStore, variants_copy: OnnxVariants) -> None:
    stamps = {p.name: p.stat().st_mtime_ns for p in variants_copy.directory.iterdir()}
    report = convert_models(store, variants_copy.directory)
    assert report.converted == [] and report.unchanged == list(CONVERTIBLE)
    assert {p.name: p.stat().st_mtime_ns for p in variants_copy.directory.iterdir()} == stamps


def test_altered_variant_is_refused_then_remade(
    store: ModelStore, variants_copy: OnnxVariants
) -> None:
    path = variants_copy.directory / "face_landmarks_v1.onnx"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelHashError, match="not loaded") as info:
        variants_copy.path("face_landmarks_v1")
    assert str(path) in str(info.value)
    report = convert_models(store, variants_copy.directory)
    assert report.converted == ["face_landmarks_v1"]
    assert variants_copy.path("face_landmarks_v1") == path


def test_variant_of_another_source_is_refused(variants_copy: OnnxVariants) -> None:
    record = json.loads(variants_copy.record_path.read_text())
    record["variants"]["face_detector_short"]["source_sha256"] = "0" * 64
    variants_copy.record_path.write_text(json.dumps(record))
    with pytest.raises(ModelError, match="made from another"):
        variants_copy.path("face_detector_short")


def test_missing_variant_says_how_to_make_it(store: ModelStore, tmp_path: Path) -> None:
    with pytest.raises(ModelMissingError, match="mirror models convert"):
        OnnxVariants(store, tmp_path).path("face_detector_short")


def test_int8_variant_is_kept_only_under_one_pixel(
    variants_copy: OnnxVariants, astronaut: np.ndarray, grace_hopper: np.ndarray
) -> None:
    photos = [Photo("astronaut", astronaut), Photo("grace_hopper", grace_hopper)]
    report = make_int8_variants(variants_copy, ["face_landmarks_v1"], photos)
    record = variants_copy.read()
    key = "face_landmarks_v1.int8"
    if key in report.kept:
        assert record.variants[key].max_error_px is not None
        assert record.variants[key].max_error_px < 1.0
        variants_copy.path("face_landmarks_v1", "int8")
    else:
        assert record.rejected[key].max_error_px >= 1.0
        assert "px" in report.rejected[key] and "worst on" in report.rejected[key]
        with pytest.raises(ModelMissingError, match="rejected"):
            variants_copy.path("face_landmarks_v1", "int8")
    again = make_int8_variants(variants_copy, ["face_landmarks_v1"], photos)
    assert again.unchanged == [key] and not again.candidates


def test_int8_variant_within_the_limit_is_recorded_and_loads(
    variants_copy: OnnxVariants, astronaut: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quantize_module, "MAX_ERROR_PX", 1e6)
    report = make_int8_variants(variants_copy, ["face_detector_short"], [Photo("a", astronaut)])
    assert list(report.kept) == ["face_detector_short.int8"]
    path = variants_copy.path("face_detector_short", "int8")
    model = OnnxBackend(("cpu",)).load(path)
    assert len(detections(model, "short", astronaut)) == 1


def test_cli_convert_reports_unchanged_variants(
    variants_copy: OnnxVariants, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["models", "convert", "--out", str(variants_copy.directory)])
    out, err = capsys.readouterr()
    assert code == 0
    assert "0 converted, 3 unchanged" in out
    assert "present and verified" in err
