"""Admin UI identities: uploads checked by content, one face exactly, nothing stored on failure."""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from flask.testing import FlaskClient
from PIL import Image
from werkzeug.test import TestResponse

from appliance.control.identities import check_name
from appliance.control.uploads import MAX_UPLOAD_BYTES
from appliance.errors import IdentityNameError
from tests.test_web_support import (
    Mirror,
    bomb_png,
    build_mirror,
    encode,
    photo,
    plain_image,
    post,
    two_faces,
)

BAD_NAMES = ["../x", "a/b", "..", ".", "x\x00y", "", " lead", "trail ", "a\\b", "x" * 41,
             "dot.ted", "new\nline", "é"]  # fmt: skip


def upload(
    client: FlaskClient,
    data: bytes,
    filename: str = "photo.jpg",
    name: str = "Ada",
    content_type: str = "image/jpeg",
) -> TestResponse:
    return post(
        client, "/identities", {"name": name, "photo": (io.BytesIO(data), filename, content_type)}
    )


def nothing_stored(mirror: Mirror) -> bool:
    root = mirror.library.root
    return not root.exists() or not any(root.iterdir())


def refused(response: TestResponse, message: str, mirror: Mirror) -> None:
    assert response.status_code in (400, 413), response.status_code
    assert message in response.text, response.text[:2000]
    assert nothing_stored(mirror)
    assert mirror.processor.identity is not None
    assert mirror.processor.identity.name == "grace_hopper"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(IdentityNameError, match="not allowed"):
        check_name(name)


@pytest.mark.parametrize("name", ["Ada", "Grace Hopper", "ada_2", "x-1", "A" * 40, "7"])
def test_good_names_pass(name: str) -> None:
    assert check_name(name) == name


def test_a_too_big_upload_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    response = upload(client, b"\xff\xd8" + b"0" * (MAX_UPLOAD_BYTES + 100_000))
    refused(response, "The upload is too big: a photo may be at most 10 MB.", mirror)
    # just over the limit, inside the form's allowance: the explicit check says the size
    response = upload(client, b"\xff\xd8" + b"0" * MAX_UPLOAD_BYTES)
    refused(response, "at most 10 MB", mirror)


def test_a_file_that_is_not_an_image_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    refused(upload(client, noise, "photo.bin", content_type=""), "not an image", mirror)
    text = b"name,score\nada,1\n" * 50
    refused(upload(client, text, "holiday.jpg"), "This file is not an image", mirror)
    refused(upload(client, b"", "empty.jpg"), "The file is empty", mirror)


def test_a_name_or_type_that_does_not_match_the_content_is_refused(
    client: FlaskClient, mirror: Mirror
) -> None:
    png = encode(photo("grace_hopper"), ".png")
    refused(upload(client, png, "grace.jpg"), "named .jpg but is a PNG image", mirror)
    refused(
        upload(client, png, "grace.png", content_type="image/gif"),
        "sent as image/gif but is a PNG image",
        mirror,
    )


def test_a_damaged_image_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    png = encode(photo("grace_hopper"), ".png")
    broken = png[:200] + b"\0" * 400 + png[600:]
    refused(upload(client, broken, "grace.png", content_type="image/png"), "damaged", mirror)


def test_decompression_bombs_are_refused(client: FlaskClient, mirror: Mirror) -> None:
    response = upload(client, bomb_png(), "bomb.png", content_type="image/png")
    refused(response, "decompression bomb", mirror)
    # a real one under Pillow's own limit: 30 megapixels of one colour, a few kB of PNG
    buffer = io.BytesIO()
    Image.new("L", (6000, 5000), 128).save(buffer, "PNG")
    assert len(buffer.getvalue()) < 100_000
    response = upload(client, buffer.getvalue(), "flat.png", content_type="image/png")
    refused(response, "6000x5000 (30 megapixels): at most 25 megapixels", mirror)


def test_a_photo_without_a_face_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    refused(upload(client, encode(plain_image())), "No face found in the photo", mirror)


def test_a_photo_with_two_faces_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    response = upload(client, encode(two_faces()))
    refused(response, "More than one face (2) in the photo: use a photo of one person", mirror)


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "x\x00y", ""])
def test_an_upload_with_a_bad_name_is_refused(
    client: FlaskClient, mirror: Mirror, name: str
) -> None:
    response = upload(client, encode(photo("grace_hopper")), name=name)
    refused(response, "is not allowed", mirror)
    assert not (mirror.base / "x.jpg").exists()


def test_a_good_photo_is_stored_previewed_and_managed(client: FlaskClient, mirror: Mirror) -> None:
    response = upload(client, encode(photo("grace_hopper")), "grace.jpg", name="Grace H")
    assert response.status_code == 302
    page = client.get(response.location).text
    assert "Added Grace H: a good photo; this is how it looks on the demo faces." in page
    assert "/identities/Grace%20H/preview.jpg" in page
    assert mirror.library.names() == ["Grace H"]
    stored = mirror.library.root / "Grace H.jpg"
    assert oct(stored.stat().st_mode & 0o777) == "0o600"

    preview = client.get("/identities/Grace H/preview.jpg")
    assert preview.status_code == 200 and preview.mimetype == "image/jpeg"
    swapped = cv2.imdecode(np.frombuffer(preview.data, np.uint8), cv2.IMREAD_COLOR)
    assert swapped is not None
    demo = photo("astronaut")  # the first row's first view, scaled to 360 px high
    # a row per demo photo (astronaut, Grace Hopper): frontal, then turned both ways
    assert swapped.shape == (2 * 360 + 8, 3 * 360 + 2 * 8, 3)
    shown = cv2.resize(demo, (360, 360), interpolation=cv2.INTER_AREA)
    assert float(np.abs(swapped[:360, :360].astype(int) - shown.astype(int)).mean()) > 1.0
    assert client.get("/identities/Grace H/photo.jpg").mimetype == "image/jpeg"

    duplicate = upload(client, encode(photo("grace_hopper")), name="grace h")
    assert duplicate.status_code == 400 and "already an identity called" in duplicate.text

    for bad in ("../evil", "a/b", "..", "x\x00y"):
        response = post(client, "/identities/Grace H/rename", {"new_name": bad})
        assert response.status_code == 400 and "is not allowed" in response.text, bad
    assert mirror.library.names() == ["Grace H"]
    assert post(client, "/identities/Grace H/rename", {"new_name": "Grace"}).status_code == 302
    assert mirror.library.names() == ["Grace"]
    assert sorted(p.name for p in mirror.library.root.iterdir()) == [
        "Grace.jpg",
        "Grace.preview.jpg",
    ]

    assert post(client, "/identities/Grace/activate").status_code == 302
    assert mirror.processor.identity is not None and mirror.processor.identity.name == "Grace"
    assert mirror.control.active_identity() == "Grace"
    response = post(client, "/identities/Grace/delete")
    assert response.status_code == 400 and "make another one active first" in response.text

    post(client, "/identities/Grace/rename", {"new_name": "Admiral"})
    assert mirror.control.active_identity() == "Admiral"

    # the choice survives a restart
    again = build_mirror(mirror.base)
    try:
        assert again.processor.identity is not None
        assert again.processor.identity.name == "grace_hopper"
        again.control.restore_state()
        assert again.processor.identity is not None
        assert again.processor.identity.name == "Admiral"
    finally:
        again.control.close()


def test_deleting_an_identity(client: FlaskClient, mirror: Mirror) -> None:
    assert upload(client, encode(photo("grace_hopper")), name="Spare").status_code == 302
    assert post(client, "/identities/Spare/delete").status_code == 302
    assert mirror.library.names() == [] and nothing_stored(mirror)
    assert post(client, "/identities/Spare/delete").status_code == 404


def test_path_traversal_in_the_address_is_refused(client: FlaskClient, mirror: Mirror) -> None:
    secret = mirror.base / "secret.jpg"
    secret.write_bytes(b"not for you")
    for path in ("/identities/..%2Fsecret/photo.jpg", "/identities/../secret/photo.jpg",
                 "/identities/..%2F..%2Fsecret/preview.jpg", "/identities/x%00y/photo.jpg",
                 "/identities/%2E%2E/photo.jpg"):  # fmt: skip
        response = client.get(path)
        assert response.status_code == 404, path
        assert b"not for you" not in response.data
    for action in ("delete", "activate", "rename"):
        response = post(client, f"/identities/..%2Fsecret/{action}", {"new_name": "x"})
        assert response.status_code in (400, 404), action
    assert secret.exists()
