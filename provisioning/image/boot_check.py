"""``mirror image build``'s check of the built root: its own kernel, device trees and initramfs.

The root as built holds the kernel the image boots (``/boot/vmlinuz-*``), its
modules with the index files ``depmod`` wrote, the board's device trees and the
initramfs ``update-initramfs`` made. :func:`check_image_root` follows each
board's chains (:mod:`provisioning.image.boot_chain`) against them, the modules
in the initramfs read with the root's own ``lsinitramfs`` (through ``chroot``,
emulated like the rest of the build), and refuses an image that would not boot.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

from provisioning.errors import ImageError
from provisioning.image.boot_chain import Board, Finding, check_board
from provisioning.image.devicetree import DeviceTree
from provisioning.image.kernel_facts import module_name, read_kernel
from provisioning.image.kernel_package import device_tree_path
from provisioning.image.spec import ImageSpec

logger = logging.getLogger(__name__)

LIST_TIMEOUT_S = 600


def initramfs_modules(root: Path, version: str) -> set[str]:
    """The module names inside ``/boot/initrd.img-VERSION`` of ``root``."""
    initrd = f"/boot/initrd.img-{version}"
    if not (root / initrd.lstrip("/")).is_file():
        raise ImageError(f"{root}{initrd}: no initramfs in the root")
    done = subprocess.run(
        ["chroot", str(root), "lsinitramfs", initrd],
        capture_output=True,
        text=True,
        timeout=LIST_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise ImageError(f"lsinitramfs {initrd}: {done.stderr.strip()[-300:]}")
    return {module_name(line) for line in done.stdout.splitlines() if ".ko" in line}


def check_image_root(spec: ImageSpec, root: Path) -> list[Finding]:
    """What keeps the image's kernel from any of its boards' chains (empty: all good)."""
    kernel = read_kernel(root, keep_index=False)
    initramfs = initramfs_modules(root, kernel.version)
    return [
        Finding(f"{board.name}, {found.chain}", found.what)
        for board in spec.boards
        for found in check_board(board, board_tree(root, board), kernel, initramfs)
    ]


def board_tree(kernel_root: Path, board: Board) -> DeviceTree:
    return DeviceTree.from_file(device_tree_path(kernel_root, board.dtb))
