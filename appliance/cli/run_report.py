"""The lines `mirror run` prints: a status line now and then, a summary at the end."""

from __future__ import annotations

from appliance.pipeline.snapshot import TelemetrySnapshot


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def status_line(snap: TelemetrySnapshot) -> str:
    return (
        f"mirror: {snap.input_fps:.1f} fps in, {snap.output_fps:.1f} fps out, "
        f"end to end p95 {_ms(snap.e2e_ms.p95)}, {snap.faces} face(s), "
        f"{snap.mode}, {snap.quality}, camera {'ok' if snap.camera.connected else 'lost'}, "
        f"thermal {snap.thermal.state.lower()}"
    )


def summary_line(snap: TelemetrySnapshot, reason: str) -> str:
    drops = ", ".join(f"{k} {v}" for k, v in sorted(snap.drops.items())) or "none"
    fps = snap.frames_out / snap.uptime_s if snap.uptime_s > 0 else 0.0
    return (
        f"mirror: {snap.frames_in} frames captured, {snap.frames_out} shown "
        f"({snap.swapped} swapped) in {snap.uptime_s:.1f} s, {fps:.1f} fps; "
        f"end to end p50 {_ms(snap.e2e_ms.p50)}, p95 {_ms(snap.e2e_ms.p95)}; "
        f"dropped: {drops}; errors {snap.error_count()}; ended: {reason}"
    )
