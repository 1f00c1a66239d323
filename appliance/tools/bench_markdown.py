"""``mirror bench --markdown``: the benchmark's figures as a Markdown page (docs/benchmarks.md).

The page says how it was made (the command's options, the machine, the
date, the machine's load average before and after the run) and that its
figures are indicative: a few runs on one machine, with whatever else that
machine was doing at the time. Each row's latencies are over every run of its
case together, its other figures the run with the median e2e p95
(``bench.pooled_run``), and every run's own p95 is shown beside it.
"""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from appliance.errors import OutputError
from appliance.fileio import atomic_write_text
from appliance.tools.bench import STAGES, VariantResult
from appliance.tools.thread_cpu import percent_line


class TargetCheck(Protocol):
    """One target checked on one pipeline run (``bench_cmd.Check``)."""

    @property
    def clip(self) -> str: ...
    @property
    def size(self) -> str: ...
    @property
    def faces(self) -> int: ...
    @property
    def target(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def figures(self) -> str: ...


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for key in ("model name", "hardware", "model"):  # x86, then Arm boards
        for line in lines:
            name, _, value = line.partition(":")
            if name.strip().lower() == key and value.strip():
                return value.strip()
    return platform.processor() or platform.machine()


def machine_line() -> str:
    """The machine the figures come from, in one line."""
    return (
        f"{_cpu_model()}, {os.cpu_count() or '?'} logical CPUs, {platform.machine()}, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def _row(r: VariantResult) -> str:
    e2e = " / ".join(_ms(r.e2e_ms[q]) for q in ("p50", "p95", "p99"))
    runs = ", ".join(_ms(p95) for p95 in r.extra.get("runs_p95_ms", [r.e2e_ms["p95"]]))
    swap = 100.0 * r.swapped / r.frames_out if r.frames_out else 0.0
    stages = []
    for stage in STAGES:
        s = r.stages_ms.get(stage)
        stages.append("-" if s is None else f"{_ms(s['p50'])} / {_ms(s['p95'])}")
    cells = [
        r.clip,
        f"{r.size[0]}x{r.size[1]}",
        str(r.faces),
        r.variant,
        f"{r.output_fps:.1f}",
        e2e,
        runs,
        str(r.dropped_total),
        str(r.stale_shown),
        f"{r.cpu_percent:.0f}",
        percent_line(r.thread_cpu_ms, r.wall_s),
        f"{r.peak_rss_mib:.0f}",
        f"{r.faces_found:.2f}",
        f"{swap:.0f}",
        *stages,
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def format_markdown(
    results: Sequence[VariantResult],
    checks: Sequence[TargetCheck],
    options: Mapping[str, object],
    *,
    machine: str | None = None,
    when: datetime.datetime | None = None,
    load: tuple[float, float] | None = None,
) -> str:
    """The whole page: how the figures were made, the table, the targets."""
    stamp = (when or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    repeat = int(str(options.get("repeat", 1)))
    runs = "one short run" if repeat == 1 else f"{repeat} short runs of each case"
    flags = ((f"--{k.replace('_', '-')}", v) for k, v in options.items())
    argv = " ".join(flag if value is True else f"{flag} {value}" for flag, value in flags)
    header = [
        "clip", "size", "faces", "variant", "fps", "e2e p50 / p95 / p99 ms",
        "e2e p95 of each run ms", "dropped",
        "stale shown", "CPU %", "CPU % by thread", "peak RSS MiB", "faces found", "swapped %",
        *(f"{stage} p50 / p95 ms" for stage in STAGES),
    ]  # fmt: skip
    lines = [
        "# Benchmark figures",
        "",
        "Written by `mirror bench --markdown`; do not edit by hand, run it again.",
        "",
        f"**These figures are indicative**: {runs} on one machine, which may have",
        "been doing other work at the time. Compare runs made on the same machine with",
        "the same options; run `mirror bench` on the target device for its own figures.",
        *(
            [
                "Each row's latencies (e2e and every stage) are over all its runs' frames",
                "together; its other figures (fps, drops, CPU, faces) are the run with the",
                "median e2e p95. The runs took turns (each went through every case before",
                "the next), so both variants' frames come from the same minutes.",
            ]
            if repeat > 1
            else []
        ),
        "",
        "How they were made:",
        "",
        f"- command: `mirror bench {argv}`",
        f"- machine: {machine or machine_line()}",
        f"- date: {stamp}",
        *(
            [f"- load average (1 min) before / after the run: {load[0]:.2f} / {load[1]:.2f}"]
            if load is not None
            else []
        ),
        "- variants: `naive` (read, detect every frame, swap, write in one thread) and",
        "  `pipeline` (the real runner: capture, process and output threads, tracking,",
        "  stale frames dropped); both read an emulated live MJPG camera, whose JPEGs",
        *(
            [
                "  carry no restart markers (`--no-restarts`): every frame is decoded whole.",
            ]
            if options.get("no_restarts")
            else [
                "  carry a restart marker after every MCU row, as many webcams' do: a frame",
                "  of 600,000 pixels or more is decoded in two halves at once.",
            ]
        ),
        "- CPU % is of one core (200 % = two busy cores), also per thread (`process`,",
        "  `capture`, `capture-jpeg`: its decode helper, the sinks, `faces`: the second",
        "  face worker, `native`: the runtimes' own pools, `helper`: the swap helper",
        "  processes, counted in the whole too); latencies are capture to output (JPEG",
        "  decode included).",
        "- cases: 1 face, 3 faces (three copies of the clip tiled 2x2) and `(group)`:",
        "  three small faces (the clip shrunk to a quarter, as a half-body shot, tiled).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *(_row(r) for r in results),
        "",
        "## Targets (pipeline rows)",
        "",
    ]
    if not checks:
        lines.append("None apply to these sizes and face counts.")
    for c in checks:
        verdict = "PASS" if c.passed else "FAIL"
        lines.append(
            f"- **{verdict}** {c.clip} {c.size} {c.faces} face(s): {c.target}: {c.figures}"
        )
    if checks:
        lines += ["", f"{sum(c.passed for c in checks)} of {len(checks)} targets passed."]
    return "\n".join(lines) + "\n"


def load_average() -> float | None:
    """The 1-minute load average, or None where the system does not tell."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def check_writable(path: Path) -> None:
    """Refuse before the (long) run when the page cannot be written there."""
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK):
        raise OutputError(f"cannot write {path}: folder {folder} is not writable")


def write_markdown(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (an old page stays whole on failure)."""
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc}") from exc
