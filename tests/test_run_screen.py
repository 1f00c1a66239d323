"""`mirror run --display auto` with a screen that cannot start: the rest runs and says why.

The real CLI, as the systemd unit starts it: a missing framebuffer, then one
that cannot be opened, then one plugged in (a faked device tree under
``MIRROR_DISPLAY_ROOT``); and SDL on KMSDRM where it cannot start (no DRM
device here, as without DRM master on a Jetson showing its desktop). No
exit 1 and restart loop: /healthz names the screen, systemd gets READY and
the watchdog, the screen is picked up when it comes, SIGTERM exits 0. The
x86-nvidia profile on this GPU-less machine also runs on the CPU instead of
TensorRT: a non-fatal note on /healthz and, for staff, on the screen.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from pathlib import Path

import numpy as np
import yaml

from appliance.modelstore import ModelStore
from appliance.resources import bundled_profiles
from tests.screen_fakes import FILL, fb_paths, plug_fb
from tests.test_run_cmd import _admin_url, _data_dir, _healthz, _start
from tests.test_supervision import FakeSystemd, systemd  # noqa: F401 (a fixture)
from tests.test_web_support import FAST_HASH
from tests.waiting import wait_for
from web_ui.auth_store import AuthStore

WIDTH, HEIGHT = 640, 480  # the demo source's size: the screen shows it 1:1


def _reason(url: str) -> str:
    return str(_healthz(url)[1].get("reason", ""))


def _note_pixels(device: Path) -> int:
    """Pixels of the staff note's colour (overlays.WARNING_RGB, antialiased: near it) at the
    screen's left edge, halfway down."""
    data = device.read_bytes()
    if len(data) < WIDTH * HEIGHT * 4:
        return 0
    screen = np.frombuffer(data, np.uint8)[: WIDTH * HEIGHT * 4].reshape(HEIGHT, WIDTH, 4)
    band = screen[HEIGHT // 2 - 16 : HEIGHT // 2 + 16, : WIDTH // 2].astype(np.int16)
    blue, green, red = band[..., 0], band[..., 1], band[..., 2]
    return int(((red > 200) & (green > 140) & (green < 230) & (blue < 110)).sum())


def test_mirror_run_without_its_screen_stays_up_says_why_and_picks_the_screen_up(
    store: ModelStore,
    tmp_path: Path,
    systemd: tuple[FakeSystemd, str],  # noqa: F811
) -> None:
    fake, socket_path = systemd
    data, root = tmp_path / "data", tmp_path / "root"
    data.mkdir()
    web = _data_dir(data, store)
    AuthStore(web / "auth.json", FAST_HASH).provision("staff password 1", must_change=False)
    device, _ = fb_paths(root)
    env = {
        **os.environ,
        "MIRROR_DATA_DIR": str(data),
        "MIRROR_DISPLAY_ROOT": str(root),
        "NOTIFY_SOCKET": socket_path,
        "WATCHDOG_USEC": "2000000",
    }
    args = ["--display", "auto", "--profile", "x86-nvidia", "--no-preview", "--status-every", "0"]
    proc = _start(args, env)
    try:
        url = _admin_url(proc)
        assert fake.wait_for("READY=1", 60.0), fake.messages
        beats = [m for m in fake.receive(3.0) if m == "WATCHDOG=1"]
        assert len(beats) >= 2, fake.messages  # fed while the frames flow, screen or not
        status, health = _healthz(url)
        assert status == 503 and health["status"] == "degraded" and health["running"], health
        assert (
            health["reason"]
            == f"screen missing: framebuffer {device} not found (no screen attached?)"
        )
        accelerator = health["degraded"]
        assert len(accelerator) == 1 and accelerator[0].startswith("accelerator: tensorrt not used")
        assert accelerator[0].endswith("running on the CPU (onnx-cpu)"), accelerator

        plug_fb(root, "simple", (WIDTH, HEIGHT))  # its sysfs, and a node that cannot be opened:
        device.unlink()
        device.mkdir()  # open() fails as it does without the video group (root opens any file)
        assert wait_for(lambda: "cannot be opened" in _reason(url), 30.0), _healthz(url)
        assert _reason(url).startswith(f"screen missing: framebuffer {device} cannot be opened")

        device.rmdir()
        plug_fb(root, "vc4drmfb", (WIDTH, HEIGHT))  # the screen is there now
        assert wait_for(lambda: _healthz(url)[0] == 200, 30.0), _healthz(url)
        status, health = _healthz(url)
        assert health["status"] == "ok" and health["degraded"] == accelerator
        assert wait_for(lambda: _note_pixels(device) > 20, 30.0)  # the staff note, drawn
        assert set(device.read_bytes()[: WIDTH * 4]) != {FILL}  # and the mirror around it
        assert proc.poll() is None  # up all along: no exit 1, so no restart loop
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "ended: stop requested" in out, out
    assert "Traceback" not in err and "mirror: error" not in err, err
    assert err.count("not found (no screen attached?)") == 1, err  # said once, with why
    assert err.count("Is a directory") == 1, err


def test_mirror_run_on_kmsdrm_it_cannot_get_stays_up_and_says_why(
    store: ModelStore, tmp_path: Path
) -> None:
    """A Jetson booted into its desktop: KMSDRM cannot get DRM master, SDL does not start."""
    if importlib.util.find_spec("pygame") is None:
        return  # without pygame the screen is reported missing as well (test_screen_guard)
    data, profiles = tmp_path / "data", tmp_path / "profiles"
    data.mkdir()
    profiles.mkdir()
    _data_dir(data, store)
    profile = yaml.safe_load((bundled_profiles() / "x86-cpu.yaml").read_text(encoding="utf-8"))
    profile.update(name="kiosk-kms")
    profile["display"] = {"kind": "sdl", "connector": "any", "resolution": "640x480"}
    profile["install"]["extras"] = ["cpu", "display"]
    (profiles / "kiosk-kms.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")
    env = {
        **os.environ,
        "MIRROR_DATA_DIR": str(data),
        "MIRROR_HARDWARE_PROFILES": str(profiles),
        "SDL_VIDEODRIVER": "kmsdrm",
    }
    args = ["--display", "auto", "--profile", "kiosk-kms", "--no-preview", "--status-every", "0"]
    proc = _start(args, env)
    try:
        url = _admin_url(proc)
        status, health = _healthz(url)
        assert status == 503 and health["running"], health
        assert health["reason"].startswith(
            "screen missing: SDL display cannot start with driver kmsdrm"
        )
        assert "degraded" not in health  # x86-cpu asks for no accelerator: nothing to miss
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "mirror: error" not in err, err
    assert err.count("SDL display cannot start with driver kmsdrm") == 1, err
