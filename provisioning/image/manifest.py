"""The manifest beside an image (``FILE.img.manifest.json``): what is inside it.

Debian packages with versions (from the root's dpkg status), the device venv's
Python distributions with versions, every bundle file's sha256 (from
``bundle.json``), the profile and the image's own sha256. Two builds from the same
inputs list the same packages and versions; the image bytes differ (file-system
UUIDs and time stamps).
"""

from __future__ import annotations

import email.parser
import json
import logging
from pathlib import Path
from typing import Any

from appliance.modelstore.hashing import sha256_file
from provisioning.image.spec import ImageSpec

logger = logging.getLogger(__name__)


def debian_packages(root: Path) -> dict[str, str]:
    """``name:arch`` -> version of every installed package in the root's dpkg status."""
    text = (root / "var/lib/dpkg/status").read_text(encoding="utf-8", errors="replace")
    packages: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line and not line[0].isspace() and ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            packages[f"{fields['Package']}:{fields.get('Architecture', '')}"] = fields["Version"]
    return dict(sorted(packages.items()))


def python_packages(venv_root: Path) -> dict[str, str]:
    """name -> version of each distribution installed in the venv (its dist-info METADATA)."""
    found: dict[str, str] = {}
    for meta in venv_root.glob("lib/python3*/site-packages/*.dist-info/METADATA"):
        headers = email.parser.HeaderParser().parsestr(meta.read_text(errors="replace"))
        if headers["Name"]:
            found[headers["Name"].lower()] = headers["Version"]
    return dict(sorted(found.items()))


def bundle_hashes(bundle: Path) -> dict[str, Any]:
    index = json.loads((bundle / "bundle.json").read_text(encoding="utf-8"))
    files = index.get("files", {})
    return {
        "bundle.json": sha256_file(bundle / "bundle.json"),
        "files": {name: meta.get("sha256") for name, meta in sorted(files.items())},
    }


def build_manifest(spec: ImageSpec, root: Path, venv_root: Path, bundle: Path) -> dict[str, Any]:
    return {
        "profile": spec.profile,
        "debian": {"suite": spec.suite, "arch": spec.arch, "packages": debian_packages(root)},
        "python": python_packages(venv_root),
        "bundle": bundle_hashes(bundle),
        "partitions": {"boot_bytes": spec.boot_bytes, "root_bytes": spec.root_bytes},
    }


def write_manifest(path: Path, manifest: dict[str, Any], image: Path) -> None:
    manifest = {**manifest, "image": {"file": image.name, "sha256": sha256_file(image)}}
    temp = path.with_name(f".{path.name}.new")
    temp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    temp.replace(path)
