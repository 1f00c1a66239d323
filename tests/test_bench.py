"""The benchmark's parts: the emulated live camera, the 3-face tiling, ``mirror bench``.

No speed is asserted: timings only need to be plausible, with generous bounds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from appliance.cli import bench_cmd
from appliance.config import Settings
from appliance.eval.report import EXPRESSION_BLENDSHAPES
from appliance.media.source_base import FrameTimeoutError
from appliance.modelstore import ModelStore
from appliance.paths import REPO_ROOT
from appliance.pipeline.factory import build_analyzer
from appliance.tools.bench import VariantResult, median_run, pooled_run
from appliance.tools.bench_clips import tile3, tile_cells, tiled_clip, video_clip
from appliance.tools.bench_markdown import format_markdown
from appliance.tools.bench_targets import Check, check_targets
from appliance.tools.cores import available_cpus
from appliance.tools.live_clip import JpegClip, LiveClipSource
from appliance.tools.thread_cpu import ThreadCpu, percent_line
from appliance.vision.face_pool import FacePool
from tests.conftest import shared_media
from tests.test_cli import assert_one_line_error, mirror

COLOURS = [(0, 0, 255), (0, 255, 0), (255, 0, 0), (0, 255, 255)]


def flat(colour: tuple[int, int, int], size: tuple[int, int] = (32, 24)) -> np.ndarray:
    image = np.zeros((size[1], size[0], 3), np.uint8)
    image[:] = colour
    return image


def colour_of(image: np.ndarray) -> int:
    """Which of COLOURS a (JPEG-decoded) flat image is."""
    means = image.reshape(-1, 3).mean(axis=0)
    return int(np.argmin([np.abs(means - np.array(c)).sum() for c in COLOURS]))


def test_clip_keeps_jpegs_and_decodes_in_order() -> None:
    clip = JpegClip.from_images(flat(c) for c in COLOURS)
    assert len(clip) == 4 and clip.size == (32, 24)
    assert [colour_of(clip.decode(i)) for i in range(6)] == [0, 1, 2, 3, 0, 1]
    assert clip.nbytes < 4 * 32 * 24 * 3  # compressed


def test_frames_are_stamped_with_their_scheduled_capture_time() -> None:
    source = LiveClipSource([flat(c) for c in COLOURS], fps=50, frames=6)
    with source:
        frames = [source.read(1.0) for _ in range(6)]
        assert source.read(1.0) is None
    indices = [f.index for f in frames if f is not None]
    assert indices == sorted(set(indices)) and indices[-1] == 5
    for frame in frames:
        assert frame is not None
        assert frame.capture_ns == source.due_ns(frame.index)
        assert colour_of(frame.image) == frame.index % 4  # the clip loops
        assert frame.encoded is source.clip.jpegs[frame.index % 4]  # its JPEG, not a copy
        assert frame.timings_ms["decode"] > 0  # part of its latency, reported on its own
    first, last = frames[0], frames[-1]
    assert first is not None and last is not None
    assert last.capture_ns - first.capture_ns == (last.index - first.index) * source.period_ns


def test_a_late_reader_gets_the_newest_frame_and_the_older_ones_are_lost() -> None:
    source = LiveClipSource([flat(c) for c in COLOURS], fps=100, frames=1000)
    with source:
        first = source.read(1.0)
        time.sleep(0.08)  # 8 periods
        late = source.read(1.0)
        assert first is not None and late is not None
        assert late.index >= first.index + 4
        assert late.capture_ns <= time.monotonic_ns()  # captured, not from the future
        assert source.frames_skipped == late.index - first.index - 1
        assert source.frames_read == 2
        assert source.frames_offered >= late.index + 1
    offered = source.frames_offered  # frozen at stop
    time.sleep(0.03)
    assert source.frames_offered == offered


def test_a_read_before_the_next_capture_waits_or_times_out() -> None:
    source = LiveClipSource([flat(c) for c in COLOURS], fps=2, frames=3)
    with source:
        assert source.read(0.5) is not None  # frame 0 is due at once
        with pytest.raises(FrameTimeoutError):
            source.read(0.01)  # frame 1 is due 0.5 s after the start
        frame = source.read(1.0)
        assert frame is not None and frame.index == 1
        assert time.monotonic_ns() >= source.due_ns(1)


def test_tiling_fills_three_cells_of_the_requested_size() -> None:
    size = (320, 240)
    tiled = tile3([flat(COLOURS[i], (64, 48)) for i in range(3)], size)
    assert tiled.shape == (240, 320, 3)
    for i, (x, y, w, h) in enumerate(tile_cells(size)):
        assert colour_of(tiled[y + h // 4 : y + 3 * h // 4, x + w // 4 : x + 3 * w // 4]) == i
    assert not tiled[-10:, :20].any() and not tiled[-10:, -20:].any()  # the empty cell

    clip = tiled_clip(JpegClip.from_images(flat(c, size) for c in COLOURS), offset=1)
    assert clip.size == size and len(clip) == 4
    cells = tile_cells(size)
    frame = clip.decode(2)  # copies of frames 2, 3 and 0
    seen = [
        colour_of(frame[y + h // 4 : y + h // 2, x + w // 4 : x + w // 2]) for x, y, w, h in cells
    ]
    assert seen == [2, 3, 0]


def test_tiled_video_shows_three_detected_faces(store: ModelStore) -> None:
    base = video_clip(shared_media("expressive_woman.mp4"), (640, 480), 3)
    clip = tiled_clip(base)
    analyzer = build_analyzer(Settings(), store)
    assert [len(analyzer.detect(clip.decode(i))) for i in range(len(clip))] == [3, 3, 3]


def test_bench_compares_naive_loop_and_pipeline(tmp_path: Path) -> None:
    out, page = tmp_path / "out.json", tmp_path / "benchmarks.md"
    proc = mirror(
        "bench",
        "--frames",
        "12",
        "--sizes",
        "320x240",
        "--faces",
        "1,3",
        "--repeat",
        "2",
        "--media",
        tmp_path / "no-media",
        "--json",
        out,
        "--markdown",
        page,
    )
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert text.startswith("# Benchmark figures") and "indicative" in text
    # every case and variant ran twice, the repeats in turn; a row is the median run
    assert proc.stdout.count("bench: run 1 of 2: ") == proc.stdout.count("bench: run 2 of 2: ") == 4
    first_of_second = proc.stdout.index("bench: run 2 of 2: ")
    assert proc.stdout.rindex("bench: run 1 of 2: ") < first_of_second
    assert "2 short runs of each case" in text and "| e2e p95 of each run ms |" in text
    assert "load average (1 min) before / after the run: " in text
    assert "bench: load average (1 min) " in proc.stdout
    assert "`mirror bench --frames 12 --fps 30.0 --sizes 320x240 --faces 1,3" in text
    assert "--repeat 2`" in text
    timings = text.split("## Quality")[0]  # the quality rows (30 frames of the clip) follow
    assert timings.count("| demo | 320x240 |") == 4 and "## Targets" in timings
    assert "| relight p50 / p95 ms | detail p50 / p95 ms |" in text
    assert "relight p50/p95" in proc.stdout
    assert "using the demo camera" in proc.stdout
    assert "targets (pipeline rows):" in proc.stdout
    data = json.loads(out.read_text())
    runs = {(r["faces"], r["variant"]): r for r in data["results"]}
    assert set(runs) == {(1, "naive"), (1, "pipeline"), (3, "naive"), (3, "pipeline")}
    for run in runs.values():
        assert len(run["extra"]["runs_p95_ms"]) == 2
        # the median run (of two, the worse) gives the row's other figures ...
        assert run["extra"]["median_run_e2e_ms"]["p95"] == max(run["extra"]["runs_p95_ms"])
        # ... and the latencies are over both runs' frames
        assert run["extra"]["pooled_frames"] == run["e2e_ms"]["count"] > run["frames_out"]
        assert run["stages_ms"]["process"]["count"] >= run["e2e_ms"]["count"]
        assert run["clip"] == "demo" and run["size"] == [320, 240]
        assert run["frames_offered"] == 12
        assert run["frames_out"] + run["dropped_total"] <= 12
        assert run["frames_out"] >= 1 and run["output_fps"] > 0
        assert set(run["e2e_ms"]) >= {"p50", "p95", "p99"}
        assert {"detect", "landmarks", "process"} <= set(run["stages_ms"])
        # the natural-face steps (issue 14) are each reported with their own cost
        assert {"gaze", "colour", "relight", "detail"} <= set(run["stages_ms"])
        assert run["cpu_percent"] > 0 and run["peak_rss_mib"] > 10
        assert run["e2e_ms"]["p50"] <= run["e2e_ms"]["p95"] <= run["e2e_ms"]["p99"]
    assert runs[(1, "naive")]["redetect_every"] == 1
    assert runs[(1, "pipeline")]["redetect_every"] > 1
    assert runs[(1, "pipeline")]["stale_shown"] == 0
    assert runs[(3, "pipeline")]["stale_shown"] == 0
    # at 320x240 only the 3-face latency rule applies, and vs naive and overhead everywhere
    kinds = [(t["faces"], t["target"].split(":")[0]) for t in data["targets"]]
    assert kinds == [
        (1, "vs naive"),
        (1, "overhead"),
        (3, "latency"),
        (3, "vs naive"),
        (3, "overhead"),
    ]


def test_bench_markdown_to_a_missing_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    proc = mirror("bench", "--frames", "5", "--markdown", tmp_path / "nope" / "b.md")
    assert_one_line_error(proc, "does not exist")
    assert "bench:" not in proc.stdout  # nothing was run


def test_bench_markdown_defaults_to_docs_benchmarks_md() -> None:
    parser = argparse.ArgumentParser()
    bench_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "--markdown"])
    assert args.markdown == REPO_ROOT / "docs" / "benchmarks.md"
    assert parser.parse_args(["bench"]).markdown is None


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--faces", "2", "--faces"),
        ("--sizes", "big", "size"),
        ("--frames", "0", "--frames"),
        ("--repeat", "0", "--repeat"),
        ("--quality-frames", "-1", "--quality-frames"),
    ],
)
def test_bench_bad_option_is_one_line(option: str, value: str, needle: str) -> None:
    assert_one_line_error(mirror("bench", option, value), needle)


# ---- issue 17: targets, faces found, per-thread CPU, --cores -------------------------------


def result(
    variant: str,
    faces: int,
    p50: float,
    p95: float,
    *,
    found: float | None = None,
    process: float | None = None,
    clip: str = "talk.mp4",
    size: tuple[int, int] = (640, 480),
) -> VariantResult:
    seen = float(faces) if found is None else found
    return VariantResult(
        variant=variant,
        redetect_every=5,
        e2e_ms={"p50": p50, "p95": p95, "p99": p95},
        stages_ms={"process": {"p50": p50 / 1.05 if process is None else process}},
        clip=clip,
        size=size,
        faces=faces,
        frames_out=150,
        output_fps=30.0,
        faces_found=seen,
        faces_median=seen,
    )


def test_no_restarts_is_a_flag_of_the_command_on_the_page() -> None:
    """``--no-restarts`` (every camera frame decoded whole) reaches the run and the
    page's command line, as the flag it is."""
    parser = argparse.ArgumentParser()
    bench_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["bench", "--no-restarts"])
    assert args.restarts is False and parser.parse_args(["bench"]).restarts is True
    args.frames, args.fps, args.sizes, args.faces = 5, 30.0, "320x240", "1"
    args.media, args.identity, args.repeat, args.cores = Path("m"), "id", 1, None
    page = format_markdown([], [], bench_cmd._options(args))
    assert "--repeat 1 --no-restarts`" in page
    assert "carry no restart markers (`--no-restarts`)" in page
    args.restarts = True
    page = format_markdown([], [], bench_cmd._options(args))
    assert "--repeat 1`" in page and "a restart marker after every MCU row" in page


def test_the_load_before_the_run_says_whether_the_machine_was_busy() -> None:
    """The load after a run is the bench's own (two busy CPUs), not a sign of others."""
    assert "busy" not in bench_cmd.load_line(0.4, 2.8, 2)
    assert bench_cmd.load_line(1.5, 2.0, 2).endswith("the timings are not this code's alone")
    assert "0.40 before, 2.80 after, 2 CPU(s)" in bench_cmd.load_line(0.4, 2.8, 2)


def test_a_row_is_the_run_with_the_median_p95() -> None:
    """Three runs of a case: the middle one by e2e p95 (a busy minute's run is left
    out), with every run's p95 in run order; of two, the worse."""
    runs = [result("pipeline", 1, 16.0, p95) for p95 in (19.0, 31.0, 18.0)]
    chosen = median_run(runs)
    assert chosen is runs[0] and chosen.extra["runs_p95_ms"] == [19.0, 31.0, 18.0]
    assert median_run(runs[1:]) is runs[1]
    with pytest.raises(ValueError, match="no runs"):
        median_run([])


def test_a_row_s_latencies_are_over_every_run_s_frames() -> None:
    """Pooled: percentiles of all three runs' frames together (not of one run, nor an
    average of runs' percentiles); the other figures are the median run's."""
    frames = [
        [10.0] * 90 + [20.0] * 10,  # p95 20 (the median run)
        [12.0] * 100,  # p95 12
        [30.0] * 100,  # p95 30 (a busy minute)
    ]
    runs = []
    for index, e2e in enumerate(frames):
        run = result("pipeline", 1, float(np.percentile(e2e, 50)), float(np.percentile(e2e, 95)))
        run.output_fps = 29.0 + index
        run.samples_ms = {"e2e": e2e, "process": [v - 1.0 for v in e2e]}
        runs.append(run)
    row = pooled_run(runs)
    everything = [v for e2e in frames for v in e2e]
    assert row.e2e_ms["p50"] == pytest.approx(np.percentile(everything, 50))  # 12
    assert row.e2e_ms["p95"] == pytest.approx(np.percentile(everything, 95))  # 30
    assert row.e2e_ms["p50"] == 12.0 and row.e2e_ms["p95"] == 30.0
    assert row.stages_ms["process"]["p50"] == 11.0 and row.stages_ms["process"]["count"] == 300
    assert row.output_fps == 29.0  # the median run's
    assert row.extra["median_run_e2e_ms"]["p95"] == 20.0
    assert row.extra["pooled_frames"] == 300 and row.extra["runs_p95_ms"] == [20.0, 12.0, 30.0]
    assert "samples_ms" not in row.as_dict()  # kept out of --json
    single = result("pipeline", 1, 10.0, 20.0)
    assert pooled_run([single]) is single and single.e2e_ms["p95"] == 20.0


def verdicts(checks: list[Check]) -> dict[tuple[str, int, str], bool]:
    return {(c.clip, c.faces, c.target.split(":")[0]): c.passed for c in checks}


def test_targets_pass_only_when_every_face_of_the_case_is_found() -> None:
    rows = [
        result("naive", 1, 17.0, 24.0),
        result("pipeline", 1, 15.0, 19.0),
        result("naive", 3, 40.0, 60.0),
        result("pipeline", 3, 20.0, 28.0),
        result("naive", 3, 40.0, 60.0, clip="talk.mp4 (group)", found=0.0),
        result("pipeline", 3, 20.0, 28.0, clip="talk.mp4 (group)", found=2.0),
    ]
    got = verdicts(check_targets(rows))
    assert got[("talk.mp4", 1, "latency")] and got[("talk.mp4", 3, "latency")]
    assert got[("talk.mp4", 1, "vs naive")] and got[("talk.mp4", 1, "overhead")]
    # as fast as the 3-face case, but two of the three small faces found: every check fails
    group = [v for (clip, _, _), v in got.items() if clip.endswith("(group)")]
    assert len(group) == 3 and not any(group)


def test_targets_fail_slower_than_naive_or_over_the_limits() -> None:
    rows = [
        result("naive", 1, 17.0, 24.0, size=(1280, 720)),
        result("pipeline", 1, 18.0, 23.0, size=(1280, 720), process=14.0),
        result("naive", 3, 30.0, 40.0, size=(1280, 720)),
        result("pipeline", 3, 20.0, 36.0, size=(1280, 720)),
    ]
    got = verdicts(check_targets(rows))
    assert got[("talk.mp4", 1, "latency")]  # 23 <= 25 ms at 720p
    assert not got[("talk.mp4", 1, "vs naive")]  # p50 18 > 17
    assert not got[("talk.mp4", 1, "overhead")]  # 18 / 14 > 1.15
    assert not got[("talk.mp4", 3, "latency")]  # 36 > 1.5 x 23


def test_one_core_targets_ask_30_fps_for_one_face_and_24_for_three() -> None:
    one = result("pipeline", 1, 15.0, 24.0)
    many = result("pipeline", 3, 30.0, 45.0)
    many.settled_fps, many.extra = 25.0, {"quality": "detect every 10 frames"}
    got = verdicts(check_targets([one, many], cores=1))
    assert got[("talk.mp4", 1, "one core")] and got[("talk.mp4", 3, "one core")]
    many.settled_fps = 20.0
    assert not verdicts(check_targets([one, many], cores=1))[("talk.mp4", 3, "one core")]
    slow = result("pipeline", 1, 15.0, 26.0)
    assert not verdicts(check_targets([slow], cores=1))[("talk.mp4", 1, "one core")]


def test_thread_cpu_names_the_busy_thread() -> None:
    meter = ThreadCpu()
    meter.start()
    spun, release = threading.Event(), threading.Event()

    def spin() -> None:  # 0.2 s of its own CPU time, however busy the machine is
        start = time.thread_time()
        while time.thread_time() - start < 0.2:
            pass
        spun.set()
        release.wait(10.0)  # alive until sampled: a thread that ends keeps its last sample

    worker = threading.Thread(target=spin, name="mirror-busy")
    worker.start()
    while not spun.wait(0.02):
        meter.update()
    meter.update()
    release.set()
    worker.join()
    used = meter.by_name()
    assert next(iter(used)) == "mirror-busy" and used["mirror-busy"] > 100.0
    assert percent_line(used, 0.3).startswith("busy ")


def test_cores_pins_every_thread_of_the_process() -> None:
    if len(available_cpus()) < 2:
        pytest.skip("needs two CPUs to see a pin")
    code = (
        "import os, threading, time\n"
        "e = threading.Event(); t = threading.Thread(target=e.wait); t.start()\n"
        "from appliance.tools.cores import pin_cores\n"
        "print(pin_cores(1))\n"
        "tasks = os.listdir('/proc/self/task')\n"
        "print(sorted({len(os.sched_getaffinity(int(p))) for p in tasks}))\n"
        "from appliance.vision.face_pool import FacePool\n"
        "print(FacePool().parallel)\n"
        "e.set()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0] == f"[{available_cpus()[0]}]" and lines[1] == "[1]"
    assert lines[2] == "False"  # one CPU: faces in turn, no helper thread
    assert FacePool().parallel  # two here


@pytest.mark.parametrize("cores", ["0", "999"])
def test_bench_cores_out_of_range_is_one_line(cores: str) -> None:
    assert_one_line_error(mirror("bench", "--cores", cores, "--frames", "5"), "--cores")


def test_bench_group_case_and_per_thread_cpu_in_the_figures(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc = mirror(
        "bench", "--frames", "10", "--sizes", "640x480", "--faces", "group", "--repeat", "1",
        "--media", tmp_path / "no-media", "--json", out, "--quality-frames", "0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["quality"] == [] and "quality of" not in proc.stdout  # --quality-frames 0
    assert {(r["clip"], r["faces"]) for r in data["results"]} == {("demo (group)", 3)}
    for run in data["results"]:
        threads = run["thread_cpu_ms"]
        main = "mirror-process" if run["variant"] == "pipeline" else "MainThread"
        assert threads[main] > 0 and next(iter(threads)) == main
        assert "faces_median" in run and "settled_fps" in run
    assert "CPU % by thread" in proc.stdout and "of " in proc.stdout.split("targets")[-1]


# ---- the quality rows: the timed swap measured as `mirror eval` does ------------------------


def test_bench_quality_rows_measure_the_one_face_swap(tmp_path: Path) -> None:
    """After the timings, each clip's 1-face swap (here the 3-face case only was timed)
    over its first frames: the artefact figures and the worst blendshape amplitude,
    printed, in the JSON and on the Markdown page; no recogniser needed."""
    out, page = tmp_path / "out.json", tmp_path / "benchmarks.md"
    proc = mirror(
        "bench", "--frames", "8", "--sizes", "320x240", "--faces", "3", "--repeat", "1",
        "--media", tmp_path / "no-media", "--quality-frames", "5", "--json", out,
        "--markdown", page,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.split("quality of the 1-face swap (grace_hopper, first 5 frames")[1]
    header, _, row = text.splitlines()[1:4]
    assert header.split() == ["clip", "size", "swapped", "stretch", "fill", "shade", "detail",
                              "gaze", "amp"]  # fmt: skip
    assert row.split()[:3] == ["demo", "320x240", "5/5"]
    data = json.loads(out.read_text())
    (quality,) = data["quality"]
    assert quality["clip"] == "demo" and quality["frames"] == 5
    for name in ("stretch", "fill_step", "shading", "detail_ratio", "amplitude"):
        assert isinstance(quality[name], float), (name, quality[name])
    assert quality["amplitude_blendshape"] in EXPRESSION_BLENDSHAPES
    assert data["options"]["quality_frames"] == 5
    markdown = page.read_text()
    assert "## Quality" in markdown and "| demo | 320x240 | 5/5 |" in markdown
