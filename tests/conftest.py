"""Shared fixtures: the verified model store, real photos, ../shared/media."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from appliance.modelstore import ModelStore

REPO = Path(__file__).resolve().parent.parent
SHARED_MEDIA = REPO.parent / "shared" / "media"


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


def shared_media(name: str) -> Path:
    """A file of ../shared/media, or a skip with the reason."""
    path = SHARED_MEDIA / name
    if not path.exists():
        pytest.skip(f"{path} absent: shared test media is only on development machines")
    return path
