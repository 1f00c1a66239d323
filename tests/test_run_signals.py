"""`mirror run` and signals: SIGHUP reloads the settings and keeps running; SIGTERM and
Ctrl-C stop it with a summary, and a `--output` recording is finished and playable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2

MIRROR = [sys.executable, "-m", "appliance.cli.main"]
ROOT = Path(__file__).resolve().parents[1]  # runs in tmp_path, with this checkout's code


def start_run(tmp_path: Path, config: Path, recording: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *MIRROR,
            "run",
            "--source",
            "demo",
            "--output",
            recording,
            "--no-web",
            "--port",
            "0",
            "--status-every",
            "0.5",
            "--config",
            config,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def wait_running(proc: subprocess.Popen[str]) -> None:
    """Until the preview address and a first status line are out (frames are flowing)."""
    assert proc.stdout is not None
    assert "preview at http://127.0.0.1:" in proc.stdout.readline()
    assert "fps in" in proc.stdout.readline()


def decoded_frames(path: Path) -> tuple[int, int]:
    """(frames the file states, frames that decode)."""
    cap = cv2.VideoCapture(str(path))
    assert cap.isOpened(), f"{path} cannot be opened"
    stated, decoded = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), 0
    while cap.read()[0]:
        decoded += 1
    cap.release()
    return stated, decoded


def test_sighup_reloads_the_settings_and_keeps_running_then_sigterm_finishes_the_recording(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text('label:\n  text: "AI-generated"\n')
    recording = tmp_path / "rec.mp4"
    proc = start_run(tmp_path, config, recording)
    try:
        wait_running(proc)
        config.write_text('label:\n  text: "Synthetic face"\n')
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        assert proc.poll() is None, "SIGHUP ended the mirror"
        config.write_text("label:\n  text: 5\n")  # a bad file: the last good settings stay
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.5)
        assert proc.poll() is None, "a bad file on SIGHUP ended the mirror"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)  # a hang guard, not a speed bound
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert f"mirror: settings reloaded from {config}: label.text" in err, err
    assert "mirror: settings not reloaded, the last good ones stay in force" in err, err
    assert "label.text=5" in err
    assert "ended: stop requested" in out, out
    assert config.read_text() == "label:\n  text: 5\n"  # a reload never writes the file
    stated, decoded = decoded_frames(recording)
    shown = int(out.split(" shown")[0].rsplit(" ", 1)[1])
    assert decoded == stated > 0 and decoded >= shown - 5, (stated, decoded, shown)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "rec.mp4"]


def test_ctrl_c_finishes_the_recording(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")
    recording = tmp_path / "rec.mp4"
    proc = start_run(tmp_path, config, recording)
    try:
        wait_running(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)  # a hang guard, not a speed bound
        assert "ended: stop requested" in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    stated, decoded = decoded_frames(recording)
    assert decoded == stated > 0
