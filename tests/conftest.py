"""Shared fixtures: the verified model store, real photos, ../shared/media."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient
from gpiozero import Device

from appliance.config import Settings
from appliance.gpio import pin_factory
from appliance.modelstore import ModelStore
from appliance.pipeline.factory import build_analyzer
from appliance.vision.analyzer import FaceAnalyzer
from appliance.vision.landmarks import LandmarkModel
from appliance.vision.light_landmarks import LightLandmarkModel
from tests.test_web_support import Mirror, build_app, build_mirror, login

REPO = Path(__file__).resolve().parent.parent
SHARED_MEDIA = REPO.parent / "shared" / "media"


def pytest_configure(config: pytest.Config) -> None:
    """Run every test (and every `mirror` it starts) in a data folder of the run's own.

    Only the verified models are shared, through a link to the real model cache:
    a test never leaves a config, an admin account or identities in the user's data
    folder (so `make run` after `make test` still makes and prints the first password).
    """
    from appliance.paths import DATA_DIR_ENV, data_dir, model_cache_dir

    models = model_cache_dir(data_dir())
    scratch = Path(tempfile.mkdtemp(prefix="mirror-test-data-"))
    (scratch / "models").symlink_to(models, target_is_directory=True)
    os.environ[DATA_DIR_ENV] = str(scratch)


@pytest.fixture(scope="session")
def store() -> ModelStore:
    s = ModelStore()
    missing = s.missing()
    if missing:
        pytest.fail(f"models missing {missing}: run `make test` (it fetches them) first")
    return s


def _read(path: Path) -> np.ndarray:
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert img is not None, path
    return img


@pytest.fixture(scope="session")
def astronaut(store: ModelStore) -> np.ndarray:
    return _read(store.path("astronaut"))


@pytest.fixture(scope="session")
def grace_hopper(store: ModelStore) -> np.ndarray:
    return _read(store.path("grace_hopper"))


@pytest.fixture(scope="module")
def analyzer(store: ModelStore) -> FaceAnalyzer:
    """The analyzer `mirror` builds from the default settings (a fresh one per module)."""
    return build_analyzer(Settings(), store)


@pytest.fixture(scope="module")
def face(analyzer: FaceAnalyzer, astronaut: np.ndarray) -> np.ndarray:
    """The astronaut's 478 landmarks (x, y pixels, z), eyes open."""
    found = analyzer.analyze(astronaut)
    assert found
    return np.asarray(found[0].points, np.float32)


def shared_media(name: str) -> Path:
    """A file of ../shared/media, or a skip with the reason."""
    path = SHARED_MEDIA / name
    if not path.exists():
        pytest.skip(f"{path} absent: shared test media is only on development machines")
    return path


def landmark_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the landmark model runs (full and light): the list grows by one per run."""
    runs: list[int] = []
    for cls in (LandmarkModel, LightLandmarkModel):
        original = cls.run

        def counted(self: object, *args: object, _run: object = original, **kw: object) -> object:
            runs.append(1)
            return _run(self, *args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(cls, "run", counted)
    return runs


def media_frames(name: str, count: int, size: tuple[int, int] | None = None) -> list[np.ndarray]:
    """The first ``count`` frames (fewer if the clip is shorter) of a ../shared/media
    video, scaled to ``size`` (area-averaged) when given; a skip when the media is absent."""
    capture = cv2.VideoCapture(str(shared_media(name)))
    frames: list[np.ndarray] = []
    while len(frames) < count:
        ok, image = capture.read()
        if not ok:
            break
        if size is not None:
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        frames.append(image)
    capture.release()
    return frames


# ---- the admin web UI over a real processor (tests/test_web_*.py) ---------------------------


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    """A real processor, telemetry and the web UI's control in a fresh data folder."""
    built = build_mirror(tmp_path)
    yield built
    built.control.close()


@pytest.fixture
def app(mirror: Mirror) -> Flask:
    return build_app(mirror)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """A test client, logged in."""
    client = app.test_client()
    login(client)
    return client


# ---- GPIO (tests/test_gpio.py, tests/test_fan.py) -------------------------------------------


@pytest.fixture
def no_factory_yet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """gpiozero has no pin factory yet and the environment names none; the warning is unsaid."""
    monkeypatch.setattr(Device, "pin_factory", None)
    monkeypatch.delenv("GPIOZERO_PIN_FACTORY", raising=False)
    monkeypatch.setattr(pin_factory, "_warned", False)
    yield
    if Device.pin_factory is not None:
        Device.pin_factory.close()
