"""The image's boot chain, read from Debian's real kernel packages and device trees.

The kernel package of each release (``linux-image-arm64``) is unpacked by
``mmdebstrap --variant=extract`` (no package script runs, nothing emulated) and
indexed by the host's ``depmod``, cached in the image cache beside the image
build's apt lists (so it is the image's own kernel version). From the Pi 4's own
device tree every node its SD card, HDMI, USB camera and watchdog depend on is
followed to the driver that binds it; the SD card's must be built in or in the
initramfs the image's module list makes. Needs root (mmdebstrap) and the package
index the first time; skips with the reason otherwise.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import fdt
import pytest

from provisioning.errors import ImageError
from provisioning.image.boot_chain import PI4, PI5, Board, Chain, check_board
from provisioning.image.boot_check import board_tree
from provisioning.image.debian_root import SEARCH_PATH
from provisioning.image.devicetree import DeviceTree
from provisioning.image.kernel_facts import KernelFacts, modules_dir, read_kernel
from provisioning.image.kernel_package import unpacked_kernel
from provisioning.image.spec import ImageSpec, spec_for
from tests.arm64.host import install_packages

BOOKWORM = spec_for("rpi4-cpu")
TRIXIE = ImageSpec(profile="rpi5-cpu", suite="trixie", arch="arm64", target="debian13-arm64")


def _kernel(spec: ImageSpec, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.geteuid() != 0:
        pytest.skip("reading Debian's kernel package needs root (mmdebstrap --mode=root)")
    log = tmp_path_factory.mktemp("kernel") / "apt.log"
    tools = {"mmdebstrap": "mmdebstrap", "depmod": "kmod"}
    missing = [pkg for tool, pkg in tools.items() if shutil.which(tool, path=SEARCH_PATH) is None]
    reason = install_packages(missing, log)
    if reason:
        pytest.skip(reason)
    try:
        return unpacked_kernel(spec, log.with_name("mmdebstrap.log"))
    except ImageError as exc:
        pytest.skip(f"cannot unpack Debian {spec.suite}'s kernel here: {exc}")


@pytest.fixture(scope="module")
def bookworm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _kernel(BOOKWORM, tmp_path_factory)


@pytest.fixture(scope="module")
def trixie(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _kernel(TRIXIE, tmp_path_factory)


def _findings(root: Path, modules: tuple[str, ...], *boards: Board) -> list[str]:
    kernel = read_kernel(root)
    initramfs = kernel.closure(set(modules))
    return [
        str(found)
        for board in boards or BOOKWORM.boards
        for found in check_board(board, board_tree(root, board), kernel, initramfs)
    ]


def test_the_pi4_image_reaches_its_sd_card_hdmi_usb_camera_and_watchdog(bookworm: Path) -> None:
    """Every node on each path has a driver; the SD card's are built in or in the initramfs
    that the image's module list makes (with what those modules load first)."""
    assert _findings(bookworm, BOOKWORM.initramfs_modules) == []


def test_without_the_sd_cards_regulators_the_root_is_never_found(bookworm: Path) -> None:
    """The list the image had: the SD host's supplies are modules outside the initramfs, the
    MMC core waits for them and the kernel gives up waiting for the root device."""
    old = tuple(m for m in BOOKWORM.initramfs_modules if m not in ("fixed", "gpio_regulator"))
    found = _findings(bookworm, old, PI4)
    assert any("gpio_regulator" in f and "regulator-gpio" in f for f in found), found
    assert any("fixed (" in f and "regulator-fixed" in f for f in found), found
    assert all(f.startswith("root device") for f in found), found


def test_the_kernel_facts_name_the_pi4_drivers(bookworm: Path) -> None:
    kernel = read_kernel(bookworm)
    assert kernel.version.endswith("-arm64")
    assert kernel.config["CONFIG_REGULATOR_GPIO"] == "m"
    emmc2 = kernel.driver(("brcm,bcm2711-emmc2",))
    assert emmc2 is not None and emmc2.module == "sdhci_iproc"
    firmware_gpio = kernel.driver(("raspberrypi,firmware-gpio",))
    assert firmware_gpio is not None and firmware_gpio.module is None  # built in
    hdmi = kernel.driver(("brcm,bcm2711-hdmi0",))  # a vc4 component: no alias of its own
    assert hdmi is not None and hdmi.module == "vc4"
    assert kernel.module_for("platform:bcm2835-wdt") == "bcm2835_wdt"
    assert kernel.driver(("acme,no-such-device",)) is None


def test_debian13s_kernel_cannot_boot_a_pi5_so_the_pi5_gets_no_image(trixie: Path) -> None:
    """Debian 13 has the Pi 5's device tree but no driver for its SD host and no RP1 (USB,
    HDMI): a Pi 5 is flashed with Raspberry Pi OS Lite, and the bundle installs on it."""
    found = _findings(trixie, BOOKWORM.initramfs_modules, PI5)
    assert any(f.startswith("root device") and "bcm2712-sdhci" in f for f in found), found
    assert any(f.startswith("USB camera") for f in found), found
    with pytest.raises(ImageError, match="Raspberry Pi OS Lite"):
        spec_for("rpi5-cpu")


def test_debian13s_kernel_needs_the_same_regulators_for_a_pi4(trixie: Path) -> None:
    assert _findings(trixie, BOOKWORM.initramfs_modules, PI4) == []


def _tree() -> DeviceTree:
    """A small tree: an SD host with two supplies, one switched by a GPIO expander behind a
    firmware node and its mailbox, a clock with one cell, pin control, inherited interrupts."""
    tree = fdt.FDT()
    root = tree.root
    root.append(fdt.PropWords("interrupt-parent", 1))
    soc = fdt.Node("soc", fdt.PropStrings("compatible", "simple-bus"))
    gic = fdt.Node("gic", fdt.PropStrings("compatible", "arm,gic-400"), fdt.PropWords("phandle", 1))
    mbox = fdt.Node("mbox", fdt.PropStrings("compatible", "acme,mbox"), fdt.PropWords("phandle", 2))
    firmware = fdt.Node(
        "firmware", fdt.PropStrings("compatible", "acme,firmware"), fdt.PropWords("mboxes", 2)
    )
    expander = fdt.Node(
        "gpio",
        fdt.PropStrings("compatible", "acme,expgpio"),
        fdt.PropWords("#gpio-cells", 2),
        fdt.PropWords("phandle", 3),
    )
    firmware.append(expander)
    clocks = fdt.Node(
        "cprman",
        fdt.PropStrings("compatible", "acme,clocks"),
        fdt.PropWords("#clock-cells", 1),
        fdt.PropWords("phandle", 4),
    )
    pins = fdt.Node("pins", fdt.PropStrings("compatible", "acme,pinctrl"))
    pins.append(fdt.Node("sd-pins", fdt.PropWords("phandle", 5)))
    vcc = fdt.Node(
        "sd-vcc",
        fdt.PropStrings("compatible", "regulator-fixed"),
        fdt.PropWords("gpio", 3, 6, 0),
        fdt.PropWords("phandle", 6),
    )
    io = fdt.Node(
        "sd-io",
        fdt.PropStrings("compatible", "regulator-gpio"),
        fdt.PropWords("gpios", 3, 4, 0),
        fdt.PropWords("phandle", 7),
    )
    mmc = fdt.Node(
        "mmc",
        fdt.PropStrings("compatible", "acme,sdhci"),
        fdt.PropWords("clocks", 4, 51),
        fdt.PropWords("vmmc-supply", 6),
        fdt.PropWords("vqmmc-supply", 7),
        fdt.PropWords("pinctrl-0", 5),
        fdt.PropWords("interrupts", 0, 126, 4),
    )
    for node in (gic, mbox, firmware, clocks, pins, mmc):
        soc.append(node)
    for node in (soc, vcc, io):
        root.append(node)
    return DeviceTree(tree.to_dtb(version=17), "small tree")


def test_the_walk_follows_supplies_gpios_clocks_pins_and_interrupts() -> None:
    tree = _tree()
    needed = {n.path for n in tree.depends("/soc/mmc")}
    assert needed == {
        "/soc/mmc",
        "/soc",  # its bus
        "/soc/cprman",  # clocks = <&cprman 51>: one cell after the phandle
        "/sd-vcc",  # vmmc-supply
        "/sd-io",  # vqmmc-supply
        "/soc/firmware/gpio",  # the supplies' gpio / gpios
        "/soc/firmware",  # the expander's parent
        "/soc/mbox",  # the firmware's mailbox
        "/soc/pins/sd-pins",  # pinctrl-0
        "/soc/pins",  # ... whose parent is the pin controller
        "/soc/gic",  # the interrupt parent, inherited from the root
    }
    assert tree.with_compatible("regulator-gpio")[0].path == "/sd-io"


def test_a_module_outside_the_initramfs_or_a_missing_driver_is_named() -> None:
    tree = _tree()
    image = b"\0".join(
        [b"", b"simple-bus", b"arm,gic-400", b"acme,mbox", b"acme,firmware", b"acme,expgpio", b""]
    )
    kernel = KernelFacts(
        version="1.0-test",
        image=image,
        aliases=[
            ("of:N*T*Cregulator-fixedC*", "fixed"),
            ("of:N*T*Cregulator-gpioC*", "gpio_regulator"),
            ("of:N*T*Cacme,sdhciC*", "sdhci_acme"),
            ("of:N*T*Cacme,clocksC*", "clk_acme"),
        ],
        deps={"fixed": (), "gpio_regulator": (), "sdhci_acme": ("sdhci",), "sdhci": ()},
        config={},
    )
    board = Board("test board", "x.dtb", (Chain("root", ("acme,sdhci",), in_initramfs=True),))
    found = [str(f) for f in check_board(board, tree, kernel, kernel.closure({"sdhci_acme"}))]
    assert "root: no driver for /soc/pins (acme,pinctrl)" in found
    assert any("clk_acme" in f for f in found)  # a module, known, but no module file
    assert any("fixed (for /sd-vcc" in f for f in found)
    assert any("gpio_regulator (for /sd-io" in f for f in found)
    assert kernel.closure({"sdhci_acme"}) == {"sdhci_acme", "sdhci"}


def test_a_merged_usr_root_has_one_kernel(tmp_path: Path) -> None:
    """An image's root links /lib to usr/lib: its one kernel is found once."""
    (tmp_path / "usr/lib/modules/6.1.0-test-arm64").mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    assert modules_dir(tmp_path) == tmp_path / "usr/lib/modules/6.1.0-test-arm64"
    (tmp_path / "usr/lib/modules/6.12.0-test-arm64").mkdir()
    with pytest.raises(ImageError, match="found 2"):
        modules_dir(tmp_path)
