"""Still images (PNG/JPEG) with machine-readable "AI-generated" metadata.

An AI-generated still carries an XMP packet with the IPTC digital source
type ``trainedAlgorithmicMedia`` and a ``dc:description``; PNG adds a
``AI-Generated: true`` text chunk and the XMP as ``XML:com.adobe.xmp`` iTXt,
JPEG adds the XMP as an APP1 segment and an EXIF ImageDescription.
"""

from __future__ import annotations

import io
import logging
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import numpy.typing as npt
from PIL import Image, PngImagePlugin, UnidentifiedImageError

from appliance.errors import InputError, OutputError
from appliance.fileio import atomic_write_bytes

logger = logging.getLogger(__name__)

DIGITAL_SOURCE_TYPE_AI = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
PNG_AI_KEY = "AI-Generated"
PNG_XMP_KEY = "XML:com.adobe.xmp"
EXIF_IMAGE_DESCRIPTION = 0x010E
JPEG_QUALITY = 92
AI_DESCRIPTION = "AI-generated image: a face was swapped by the face mirror"

_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}
_NS = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "dc": "http://purl.org/dc/elements/1.1/",
    "Iptc4xmpExt": "http://iptc.org/std/Iptc4xmpExt/2008-02-29/",
}
_DST_ATTR = f"{{{_NS['Iptc4xmpExt']}}}DigitalSourceType"


def save_still(
    path: Path, image_bgr: npt.NDArray[np.uint8], ai_generated: bool, label_text: str | None = None
) -> None:
    """Write ``image_bgr`` as PNG or JPEG (by suffix), atomically, with AI metadata."""
    path = Path(path)
    fmt = _format_for(path)
    data = _encode(_to_pil(image_bgr), fmt, _save_options(fmt, ai_generated, label_text), path)
    atomic_write_bytes(path, data)
    logger.info("saved still %s (ai_generated=%s)", path, ai_generated)


def read_ai_metadata(path: Path) -> dict[str, str]:
    """The AI-provenance metadata of a still; empty when it has none.

    Keys, each only when present: ``ai_generated`` ("true" when any marker
    says so), ``digital_source_type``, ``description``, ``png_ai_generated``,
    ``exif_description``.
    """
    path = Path(path)
    try:
        with Image.open(path) as image:
            info = dict(image.info)
            exif_desc = image.getexif().get(EXIF_IMAGE_DESCRIPTION)
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise InputError(f"cannot read image metadata from {path}: {exc}") from exc
    meta = _parse_xmp(info.get("xmp") or info.get(PNG_XMP_KEY))
    if isinstance(info.get(PNG_AI_KEY), str):
        meta["png_ai_generated"] = info[PNG_AI_KEY]
    if isinstance(exif_desc, str) and exif_desc:
        meta["exif_description"] = exif_desc
    if (
        meta.get("digital_source_type") == DIGITAL_SOURCE_TYPE_AI
        or meta.get("png_ai_generated", "").lower() == "true"
    ):
        meta["ai_generated"] = "true"
    return meta


def build_xmp(description: str) -> str:
    """An XMP packet marking the image as made by a trained algorithm."""
    return (
        '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">\n'
        f' <rdf:RDF xmlns:rdf="{_NS["rdf"]}">\n'
        '  <rdf:Description rdf:about=""\n'
        f'    xmlns:dc="{_NS["dc"]}"\n'
        f'    xmlns:Iptc4xmpExt="{_NS["Iptc4xmpExt"]}"\n'
        f"    Iptc4xmpExt:DigitalSourceType={quoteattr(DIGITAL_SOURCE_TYPE_AI)}>\n"
        "   <dc:description><rdf:Alt>"
        f'<rdf:li xml:lang="x-default">{escape(description)}</rdf:li>'
        "</rdf:Alt></dc:description>\n"
        "  </rdf:Description>\n"
        " </rdf:RDF>\n"
        "</x:xmpmeta>\n"
        '<?xpacket end="w"?>'
    )


def _format_for(path: Path) -> str:
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise OutputError(f"cannot write {path}: unsupported still format, use .png, .jpg or .jpeg")
    return fmt


def _to_pil(image_bgr: npt.NDArray[np.uint8]) -> Image.Image:
    if not isinstance(image_bgr, np.ndarray) or image_bgr.dtype != np.uint8:
        raise InputError("still image must be a uint8 numpy array")
    if image_bgr.ndim != 3 or image_bgr.shape[2] != 3 or 0 in image_bgr.shape:
        raise InputError(f"still image must be HxWx3 BGR, not shape {image_bgr.shape}")
    return Image.fromarray(np.ascontiguousarray(image_bgr[..., ::-1]), "RGB")


def _description(label_text: str | None) -> str:
    return f"{AI_DESCRIPTION} (visible label: {label_text})" if label_text else AI_DESCRIPTION


def _save_options(fmt: str, ai_generated: bool, label_text: str | None) -> dict[str, object]:
    options: dict[str, object] = {"quality": JPEG_QUALITY} if fmt == "JPEG" else {}
    if ai_generated:
        description = _description(label_text)
        options |= _png_options(description) if fmt == "PNG" else _jpeg_options(description)
    return options


def _encode(image: Image.Image, fmt: str, options: dict[str, object], path: Path) -> bytes:
    buffer = io.BytesIO()
    try:
        image.save(buffer, fmt, **options)
    except (OSError, ValueError) as exc:
        raise OutputError(f"cannot encode {path} as {fmt}: {exc}") from exc
    return buffer.getvalue()


def _png_options(description: str) -> dict[str, object]:
    info = PngImagePlugin.PngInfo()
    info.add_text(PNG_AI_KEY, "true")
    info.add_itxt("Description", description)
    info.add_itxt(PNG_XMP_KEY, build_xmp(description))
    return {"pnginfo": info}


def _jpeg_options(description: str) -> dict[str, object]:
    exif = Image.Exif()
    # EXIF ASCII fields cannot hold other scripts; the XMP keeps the full text.
    exif[EXIF_IMAGE_DESCRIPTION] = description if description.isascii() else AI_DESCRIPTION
    return {"xmp": build_xmp(description).encode("utf-8"), "exif": exif.tobytes()}


def _parse_xmp(xmp: object) -> dict[str, str]:
    """``digital_source_type`` and ``description`` from an XMP packet."""
    if isinstance(xmp, bytes):
        xmp = xmp.decode("utf-8", errors="replace")
    if not isinstance(xmp, str) or not xmp.strip():
        return {}
    try:
        root = ET.fromstring(xmp.strip().lstrip("\ufeff"))
    except ET.ParseError:
        logger.warning("ignoring unparsable XMP packet")
        return {}
    meta: dict[str, str] = {}
    for desc in root.iter(f"{{{_NS['rdf']}}}Description"):
        value = desc.get(_DST_ATTR) or desc.findtext("Iptc4xmpExt:DigitalSourceType", None, _NS)
        if value:
            meta["digital_source_type"] = value.strip()
        text = desc.findtext("dc:description/rdf:Alt/rdf:li", None, _NS)
        if text:
            meta["description"] = text.strip()
    return meta
