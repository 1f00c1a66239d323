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

# The card (an MBR; the Pi's firmware reads MBR and switches boot partitions by autoboot.txt):
#   1 RASPIFIRM  FAT: autoboot.txt (which slot boots) and the venue file; at /boot/firmware
#   2, 3         FAT: slot A's and slot B's kernel, initramfs, device trees, cmdline.txt
#   4            the extended partition holding 5-7
#   5, 6         ext4: slot A's and slot B's root (RAUC writes the slot not running)
#   7 MIRRORDATA ext4: /var/lib/mirror and the journal (never written by an update);
#                the only partition that grows to fill the card at the first boot
BOOT_LABEL = "RASPIFIRM"  # Debian's raspi label: the partition an installer edits
SLOT_BOOT_LABEL = "MIRRORBOOT"
ROOT_LABEL = "MIRRORROOT"
DATA_LABEL = "MIRRORDATA"
# one fixed MBR disk signature, so each slot's cmdline.txt names its root by PARTUUID (the
# root images of both slots are the same file system, so a label could not tell them apart)
DISK_SIGNATURE = 0x6D697272
SLOTS = {"A": (2, 5), "B": (3, 6)}  # a slot's bootname -> (boot partition, root partition)
DATA_PARTITION = 7
EXTENDED_PARTITION = 4
DATA_MOUNT = "/data"  # the data partition; /var/lib/mirror and /var/log/journal bind from it
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
    "rauc",  # A/B updates from signed bundles (provisioning.image.rauc_files)
    "rauc-service",  # its D-Bus service: `rauc install` and `rauc status` talk to it
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
    boot_bytes: int = 256 * MIB  # each slot's
    root_bytes: int = 3 * GIB  # each slot's
    shared_bytes: int = 32 * MIB
    data_bytes: int = 256 * MIB  # grows to fill the card at the first boot

    @property
    def qemu_arch(self) -> str:
        return {"arm64": "aarch64", "amd64": "x86_64"}[self.arch]

    @property
    def image_bytes(self) -> int:
        slots = 2 * (self.boot_bytes + self.root_bytes)
        # the MBR and alignment, and one MiB before each logical partition (its EBR)
        return self.shared_bytes + slots + self.data_bytes + 8 * MIB


def partuuid(number: int) -> str:
    """The PARTUUID of partition ``number`` on a card flashed with the image."""
    return f"{DISK_SIGNATURE:08x}-{number:02d}"


def slot_of_partition(number: int) -> str | None:
    return next((slot for slot, parts in SLOTS.items() if number in parts), None)


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
