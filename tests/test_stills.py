"""Still images: formats, AI-provenance metadata, atomic and clear failures."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from appliance.errors import InputError, OutputError
from appliance.media.stills import (
    DIGITAL_SOURCE_TYPE_AI,
    EXIF_IMAGE_DESCRIPTION,
    read_ai_metadata,
    save_still,
)

SUFFIXES = [".png", ".jpg", ".jpeg", ".JPG"]


def _jpeg_segments(data: bytes) -> list[tuple[int, bytes]]:
    """(marker, payload) of the JPEG header segments up to start-of-scan."""
    assert data[:2] == b"\xff\xd8"
    segments, pos = [], 2
    while data[pos] == 0xFF and data[pos + 1] != 0xDA:
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        segments.append((data[pos + 1], data[pos + 4 : pos + 2 + length]))
        pos += 2 + length
    return segments


@pytest.fixture(scope="module")
def photo(astronaut: np.ndarray) -> np.ndarray:
    return cv2.resize(astronaut, (160, 120))


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_ai_still_round_trips_metadata(tmp_path: Path, photo: np.ndarray, suffix: str) -> None:
    path = tmp_path / f"swap{suffix}"
    save_still(path, photo, ai_generated=True, label_text="AI-generated")
    meta = read_ai_metadata(path)
    assert meta["ai_generated"] == "true"
    assert meta["digital_source_type"] == DIGITAL_SOURCE_TYPE_AI
    assert "AI-generated" in meta["description"]
    assert "visible label: AI-generated" in meta["description"]
    back = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert back is not None and back.shape == photo.shape
    tolerance = 0 if suffix == ".png" else 8
    assert np.abs(back.astype(int) - photo.astype(int)).mean() <= tolerance


def test_png_has_text_chunk_and_xmp_itxt(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "swap.png"
    save_still(path, photo, ai_generated=True, label_text="AI合成")
    data = path.read_bytes()
    assert b"tEXtAI-Generated\x00true" in data
    assert b"iTXtXML:com.adobe.xmp\x00" in data
    assert b"trainedAlgorithmicMedia" in data
    meta = read_ai_metadata(path)
    assert meta["png_ai_generated"] == "true"
    assert "AI合成" in meta["description"]


def test_jpeg_has_xmp_app1_and_exif_description(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "swap.jpg"
    save_still(path, photo, ai_generated=True, label_text="AI合成")
    app1 = [body for marker, body in _jpeg_segments(path.read_bytes()) if marker == 0xE1]
    xmp = [body for body in app1 if body.startswith(b"http://ns.adobe.com/xap/1.0/\x00")]
    assert len(xmp) == 1 and b"trainedAlgorithmicMedia" in xmp[0]
    assert any(body.startswith(b"Exif\x00\x00") for body in app1)
    with Image.open(path) as image:
        description = image.getexif()[EXIF_IMAGE_DESCRIPTION]
    assert "AI-generated" in description
    meta = read_ai_metadata(path)
    assert "AI-generated" in meta["exif_description"]
    assert "AI合成" in meta["description"]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_plain_still_has_no_ai_marker(tmp_path: Path, photo: np.ndarray, suffix: str) -> None:
    path = tmp_path / f"plain{suffix}"
    save_still(path, photo, ai_generated=False)
    assert read_ai_metadata(path) == {}
    data = path.read_bytes()
    assert b"trainedAlgorithmicMedia" not in data
    assert b"AI-Generated" not in data


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "out" / "swap.png"
    save_still(path, photo, ai_generated=False)
    save_still(path, photo, ai_generated=True)
    assert read_ai_metadata(path)["ai_generated"] == "true"
    assert [p.name for p in path.parent.iterdir()] == ["swap.png"]


@pytest.mark.parametrize("name", ["swap.gif", "swap.webp", "swap"])
def test_unsupported_suffix_names_the_path(tmp_path: Path, photo: np.ndarray, name: str) -> None:
    path = tmp_path / name
    with pytest.raises(OutputError, match=re.escape(str(path))):
        save_still(path, photo, ai_generated=True)
    assert not path.exists()


def test_parent_is_a_file_is_an_output_error(tmp_path: Path, photo: np.ndarray) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    path = blocker / "sub" / "swap.png"
    with pytest.raises(OutputError, match="cannot write") as info:
        save_still(path, photo, ai_generated=True)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_target_is_a_directory_is_an_output_error(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "taken.png"
    path.mkdir()
    with pytest.raises(OutputError, match="cannot write"):
        save_still(path, photo, ai_generated=True)
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize(
    "image",
    [np.zeros((10, 10), np.uint8), np.zeros((10, 10, 4), np.uint8), np.zeros((10, 10, 3))],
)
def test_bad_image_is_rejected(tmp_path: Path, image: np.ndarray) -> None:
    with pytest.raises(InputError):
        save_still(tmp_path / "x.png", image, ai_generated=True)


def test_reading_a_non_image_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "fake.png"
    path.write_bytes(b"not an image")
    with pytest.raises(InputError, match=r"fake\.png"):
        read_ai_metadata(path)
