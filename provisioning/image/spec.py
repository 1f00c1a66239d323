"""What an image for a profile holds: the Debian release, its packages and the partitions.

Only the Raspberry Pi 4 profiles get an image: Debian 12 arm64 boots them with
Debian's own ``linux-image-arm64`` and ``raspi-firmware``. A Raspberry Pi 5 with a
CSI camera needs Raspberry Pi OS (its kernel and libcamera), a Jetson needs JetPack:
those install on the vendor's OS with the same bundle (README, "Installing on a
device").

The initramfs holds a short module list (``MODULES=list``): the SD card and USB
storage of a Pi 4 and the virtio disk of the boot test, ext4 and vfat. Building it
is what costs most under emulation; the full ``MODULES=most`` set takes about
20 minutes on a 2-core x86 machine, the list a fraction of that. The list is
checked against the kernel package itself (:mod:`provisioning.image.boot_chain`):
the Pi 4's SD host is powered by a ``regulator-fixed`` and a ``regulator-gpio``
(``vmmc-supply``, ``vqmmc-supply``), whose drivers Debian builds as modules, and
the MMC core waits for its supplies: without ``fixed`` and ``gpio_regulator`` in
the initramfs the root never appears. ``mirror image build`` checks the built
initramfs the same way before it writes the image.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from provisioning.errors import ImageError
from provisioning.image.boot_chain import PI4, PI400, Board

logger = logging.getLogger(__name__)

BOOT_LABEL = "RASPIFIRM"  # the labels Debian's raspi images use (raspi-firmware's defaults)
ROOT_LABEL = "RASPIROOT"
GIB = 1024**3
MIB = 1024**2
# an "8 GB" card holds about 7.4 GiB; the root grows to fill the card at the first boot
CARD_BYTES = 7 * GIB

PACKAGES = (
    "systemd-sysv",
    "udev",
    "dbus",  # logind (the power key) and hostnamectl
    "kmod",
    "linux-image-arm64",
    "raspi-firmware",
    "firmware-brcm80211",  # the Pi 4's Wi-Fi
    # cfg80211's regulatory.db: without it the venue's `country:` is ignored (world rules);
    # a Recommends of the kernel, which mmdebstrap does not install
    "wireless-regdb",
    "wpasupplicant",
    "systemd-resolved",
    "systemd-timesyncd",
    "iproute2",
    "openssh-server",  # off unless the venue file gives a public key
    "cloud-guest-utils",  # growpart: the root partition grows to fill the card
    "e2fsprogs",
    "dosfstools",
    "tzdata",
    "python3",
    "python3-venv",
    "ca-certificates",
)

INITRAMFS_MODULES = (
    "ext4",
    "vfat",
    "nls_cp437",
    "nls_ascii",
    "mmc_block",
    "sdhci_iproc",
    "fixed",  # regulator-fixed: the SD card's supply (vmmc-supply)
    "gpio_regulator",  # regulator-gpio: the SD card's 1.8/3.3 V I/O supply (vqmmc-supply)
    "bcm2835",
    "usb_storage",
    "uas",
    "xhci_pci",
    "pcie_brcmstb",
    "reset_raspberrypi",
    "virtio_blk",
    "virtio_pci",
    "virtio_mmio",
)


@dataclass(frozen=True)
class ImageSpec:
    profile: str
    suite: str
    arch: str
    target: str  # the bundle's target (``mirror provision bundle --target``)
    packages: tuple[str, ...] = PACKAGES
    components: tuple[str, ...] = ("main", "non-free-firmware")
    initramfs_modules: tuple[str, ...] = INITRAMFS_MODULES
    boards: tuple[Board, ...] = (PI4, PI400)  # checked against the kernel (boot_chain)
    boot_bytes: int = 256 * MIB
    root_bytes: int = 3 * GIB

    @property
    def qemu_arch(self) -> str:
        return {"arm64": "aarch64", "amd64": "x86_64"}[self.arch]

    @property
    def image_bytes(self) -> int:
        return self.boot_bytes + self.root_bytes + 4 * MIB  # the MBR and alignment


VENDOR_OS = {
    # Debian 13's kernel (6.12) has the Pi 5's device tree but no driver for its SD host
    # (MMC_SDHCI_BRCMSTB unset) and no RP1 (its USB, Ethernet, camera ports): see boot_chain
    "rpi5": (
        "a Raspberry Pi 5 needs Raspberry Pi OS Lite (64-bit), flashed with Raspberry Pi "
        "Imager: Debian's kernel has no driver for its SD card, USB or HDMI"
    ),
    "jetson": "a Jetson needs NVIDIA's JetPack (CUDA, TensorRT, the camera stack)",
    "x86": "an x86 box installs on Debian or Ubuntu with its GPU driver",
    "generic": "a generic machine installs on its own OS",
}


def spec_for(profile: str, root_bytes: int | None = None) -> ImageSpec:
    """The image of ``profile``; an :class:`ImageError` naming the install path when none."""
    if profile.startswith("rpi4-"):
        spec = ImageSpec(profile=profile, suite="bookworm", arch="arm64", target="debian12-arm64")
        if root_bytes is not None:
            spec = ImageSpec(**{**spec.__dict__, "root_bytes": root_bytes})
        if spec.image_bytes > CARD_BYTES:
            raise ImageError(f"a {spec.image_bytes / GIB:.1f} GiB image does not fit an 8 GB card")
        return spec
    why = next((text for key, text in VENDOR_OS.items() if profile.startswith(key)), None)
    reason = why or "only the Raspberry Pi 4 profiles (rpi4-*) have an image"
    raise ImageError(
        f"no image for profile {profile}: {reason}; install it on that OS with the same bundle "
        "(README: Installing on a device)"
    )
