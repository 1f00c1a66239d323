"""Coral accelerators: USB by vendor/product id in sysfs, PCIe/M.2 as ``/dev/apex_*``."""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.device.facts import CoralUsb

logger = logging.getLogger(__name__)

# The USB accelerator enumerates as Global Unichip until libedgetpu loads its
# firmware, then as Google.
CORAL_USB_IDS = {
    "1a6e:089a": "Coral USB accelerator (firmware not loaded yet)",
    "18d1:9302": "Coral USB accelerator",
}


def _read_id(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip().lower()
    except (OSError, UnicodeDecodeError):
        return None


def find_coral_usb(root: Path) -> tuple[CoralUsb, ...]:
    """Every Coral USB accelerator under ``<root>/sys/bus/usb/devices``."""
    found = []
    for device in sorted((root / "sys/bus/usb/devices").glob("*")):
        vendor = _read_id(device / "idVendor")
        product = _read_id(device / "idProduct")
        if vendor is None or product is None:
            continue
        usb_id = f"{vendor}:{product}"
        if usb_id in CORAL_USB_IDS:
            logger.debug("Coral USB %s at %s", usb_id, device.name)
            found.append(CoralUsb(usb_id=usb_id, sysfs_name=device.name))
    return tuple(found)


def find_coral_pcie(root: Path) -> tuple[str, ...]:
    """``/dev/apex_N`` nodes (named as on the device, not under ``root``)."""
    return tuple(f"/dev/{node.name}" for node in sorted((root / "dev").glob("apex_*")))
