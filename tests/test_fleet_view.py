"""The fleet view: ``fleet/prometheus.yml`` scrapes a running mirror over HTTPS with its
scrape token, and every metric ``fleet/grafana-dashboard.json`` asks for is in the scrape.

A real admin app over HTTPS on loopback (the device's own certificate), real demo frames
through a real runner, and a thermal zone on a faked device root (this machine has no
sensor), and RAUC's slots from a fake ``rauc`` first on PATH (``tests.fake_rauc``: this
machine has no A/B image). With Debian's ``prometheus`` package installed, a real
Prometheus scrapes that mirror with the repository's configuration and answers every
dashboard query.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from appliance.config import Settings
from appliance.device.build import booted_slot, build_info
from appliance.device.catalog import load_profiles
from appliance.media.demo_source import DemoSource
from appliance.media.null_sink import NullSink
from appliance.pipeline.runner import PipelineRunner
from appliance.thermal.runner import governor_for
from tests.fake_rauc import install_fake_rauc, path_with
from tests.test_web_support import Mirror, photo, run_frames
from tests.waiting import wait_for
from tests.web_served import serve_tls, trusting
from web_ui.blueprints.health import CMDLINE_KEY
from web_ui.server import WebServer

FLEET = Path(__file__).resolve().parent.parent / "fleet"
DASHBOARD = FLEET / "grafana-dashboard.json"
SCRAPE_CONFIG = FLEET / "prometheus.yml"
METRIC_RE = re.compile(r"\bmirror_[A-Za-z0-9_]+")
CMDLINE = "console=tty1 root=/dev/mmcblk0p3 rootwait rauc.slot=B quiet\n"
ZONE_C = 58.5
STARTUP_S = 120.0  # a loaded machine: Prometheus' first start, the first scrapes


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def queries() -> list[str]:
    return [target["expr"] for panel in dashboard()["panels"] for target in panel["targets"]]


def asked_metrics() -> set[str]:
    return {name for expr in queries() for name in METRIC_RE.findall(expr)}


@pytest.fixture
def fleet_app(app: Flask, tmp_path: Path) -> Flask:
    cmdline = tmp_path / "cmdline"
    cmdline.write_text(CMDLINE, encoding="ascii")
    app.config[CMDLINE_KEY] = cmdline
    return app


@pytest.fixture
def served(
    fleet_app: Flask, mirror: Mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WebServer]:
    """The mirror after a short demo run, with a thermal zone read once and RAUC's slots
    read once (``/metrics`` reads them beside its requests), over HTTPS."""
    monkeypatch.setenv("PATH", path_with(install_fake_rauc(tmp_path / "bin")))
    run_frames(mirror, frames=10)
    zone = tmp_path / "device/sys/class/thermal/thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text(f"{int(ZONE_C * 1000)}\n", encoding="ascii")
    profile = load_profiles()["rpi5-cpu"]
    device = tmp_path / "device"
    governor = governor_for(profile, Settings(), telemetry=mirror.telemetry, root=device)
    try:
        governor.poll()
    finally:
        governor.stop()
    server = serve_tls(fleet_app, mirror.web_dir)
    try:
        slots = wait_for(lambda: "mirror_slot_info" in scrape(server, mirror), 60.0, poll_s=0.2)
        assert slots, "RAUC's slots never reached /metrics"
        yield server
    finally:
        server.stop()


def token_of(mirror: Mirror) -> str:
    return (mirror.web_dir / "metrics_token").read_text(encoding="ascii").strip()


def scrape(server: WebServer, mirror: Mirror) -> dict[str, list[Any]]:
    """The samples of one GET /metrics with the scrape token, by sample name."""
    request = urllib.request.Request(
        f"{server.url}metrics", headers={"Authorization": f"Bearer {token_of(mirror)}"}
    )
    context = trusting(mirror.web_dir)
    with urllib.request.urlopen(request, timeout=60, context=context) as response:
        text = response.read().decode()
    samples: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def more_frames(mirror: Mirror, frames: int = 10) -> None:
    """Real demo frames through a second runner (the preview sink runs once): more counts."""
    source = DemoSource(photo("astronaut"), size=(320, 240), fps=30.0, frames=frames)
    runner = PipelineRunner(
        source, mirror.control.processor, [NullSink()], mirror.telemetry, 2000.0, frame_limit=frames
    )
    runner.start()
    try:
        assert runner.wait(60.0), "the demo run did not end"
    finally:
        runner.stop()


def healthz_ok(server: WebServer, mirror: Mirror) -> bool:
    context = trusting(mirror.web_dir)
    try:
        with urllib.request.urlopen(f"{server.url}healthz", timeout=60, context=context):
            return True
    except urllib.error.HTTPError as exc:
        assert exc.code == 503
        return False


def test_the_dashboard_is_a_grafana_model_with_the_fleet_table() -> None:
    data = dashboard()
    assert [i["name"] for i in data["__inputs"]] == ["DS_PROMETHEUS"]
    for panel in data["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert all(t["datasource"]["uid"] == "${DS_PROMETHEUS}" for t in panel["targets"])
    table = next(p for p in data["panels"] if p["type"] == "table")
    organize = next(t for t in table["transformations"] if t["id"] == "organize")
    columns = set(organize["options"]["renameByName"].values())
    wanted = {"Mirror", "Version", "Slot", "Other slot", "Temperature", "fps", "Swapped share"}
    assert wanted | {"Health"} <= columns
    assert {p["type"] for p in data["panels"]} == {"table", "timeseries"}
    fleet = {"mirror_build_info", "mirror_healthy", "mirror_thermal_temperature_c"}
    fleet.add("mirror_slot_info")
    assert fleet <= asked_metrics()


def test_a_scrape_has_every_metric_the_dashboard_asks_for(
    served: WebServer, mirror: Mirror
) -> None:
    samples = scrape(served, mirror)
    missing = asked_metrics() - set(samples)
    assert not missing, f"the dashboard asks for {sorted(missing)}, not in /metrics"

    (info,) = samples["mirror_build_info"]
    assert info.value == 1
    assert info.labels == {"version": version("face-mirror"), "slot": "B"}
    (temperature,) = samples["mirror_thermal_temperature_c"]
    assert temperature.value == ZONE_C
    (healthy,) = samples["mirror_healthy"]
    assert healthy.value == float(healthz_ok(served, mirror))  # the demo run ended: degraded
    (shown,) = samples["mirror_frames_shown_total"]
    (swapped,) = samples["mirror_frames_swapped_total"]
    assert 0 < swapped.value <= shown.value


def test_the_slot_is_rauc_s_word_on_the_kernel_command_line(tmp_path: Path) -> None:
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/mmcblk0p2 rauc.slot=A rootwait\n", encoding="ascii")
    assert booted_slot(cmdline) == "A"
    assert build_info(cmdline).slot == "A"
    cmdline.write_text("rauc.slot=B rauc.slot=A\n", encoding="ascii")
    assert booted_slot(cmdline) == "B"  # the first one, as RAUC reads it
    for line in ("root=/dev/sda2 quiet\n", "rauc.slot= xrauc.slot=A rauc.slotx=A\n", ""):
        cmdline.write_text(line, encoding="ascii")
        assert booted_slot(cmdline) == "none", line
    assert booted_slot(tmp_path / "absent") == "none"
    assert build_info(tmp_path / "absent").version == version("face-mirror")


# ---- a real Prometheus ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def lay_out_credentials(directory: Path, server: WebServer, mirror: Mirror) -> None:
    """What an installer puts beside the scrape configuration for the mirror ``lobby``."""
    credentials = directory / "mirrors" / "lobby"
    credentials.mkdir(parents=True)
    (credentials / "metrics-token").write_text(token_of(mirror) + "\n", encoding="ascii")
    (credentials / "metrics-token").chmod(0o600)
    shutil.copy(mirror.web_dir / "tls-cert.pem", credentials / "tls-cert.pem")


def for_this_test(config: dict[str, Any], target: str) -> dict[str, Any]:
    """The repository's configuration, scraping ``target`` every second."""
    config["global"]["scrape_interval"] = "1s"
    config["global"]["scrape_timeout"] = "1s"
    (job,) = config["scrape_configs"]
    (static,) = job["static_configs"]
    static["targets"] = [target]
    return config


class PrometheusApi:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/api/v1/"

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = self.url + "query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=30) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        try:
            result = self.query(expr)
        except OSError:
            return None  # not listening yet
        return float(result[0]["value"][1]) if result else None


@pytest.fixture
def prometheus_binary() -> str:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("no prometheus binary on PATH (Debian: apt-get install prometheus)")
    return binary


def check_config(directory: Path, name: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        return  # Debian's prometheus package ships it; another build may not
    checked = subprocess.run(
        [promtool, "check", "config", name],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture
def prometheus(
    prometheus_binary: str, served: WebServer, mirror: Mirror, tmp_path: Path
) -> Iterator[PrometheusApi]:
    """A real Prometheus with the repository's scrape configuration, aimed at ``served``."""
    directory = tmp_path / "prometheus"
    directory.mkdir()
    lay_out_credentials(directory, served, mirror)
    shutil.copy(SCRAPE_CONFIG, directory / "as-shipped.yml")
    check_config(directory, "as-shipped.yml")
    config = yaml.safe_load(SCRAPE_CONFIG.read_text(encoding="utf-8"))
    target = f"{served.host}:{served.port}"
    (directory / "prometheus.yml").write_text(yaml.safe_dump(for_this_test(config, target)))
    check_config(directory, "prometheus.yml")
    port = free_port()
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            prometheus_binary,
            f"--config.file={directory / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        api = PrometheusApi(port)
        up = wait_for(lambda: api.value("up") == 1.0, timeout_s=STARTUP_S, poll_s=0.5)
        assert up, (tmp_path / "prometheus.log").read_text()[-4000:] + str(api.query("up"))
        yield api
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def test_a_real_prometheus_scrapes_the_mirror_for_every_dashboard_query(
    prometheus: PrometheusApi, served: WebServer, mirror: Mirror
) -> None:
    (info,) = prometheus.query("mirror_build_info")
    assert info["metric"]["version"] == version("face-mirror")
    assert info["metric"]["slot"] == "B"
    assert info["metric"]["instance"] == f"{served.host}:{served.port}"
    assert info["metric"]["job"] == "mirror-lobby" and info["metric"]["mirror"] == "lobby"

    # more frames after the first scrapes: the rates of the swapped share have two points
    before = prometheus.value("mirror_frames_shown_total")
    assert before is not None
    more_frames(mirror)
    grew = wait_for(
        lambda: (prometheus.value("mirror_frames_shown_total") or 0) > before,
        timeout_s=STARTUP_S,
        poll_s=0.5,
    )
    assert grew, "Prometheus never scraped the new frames"

    for expr in queries():
        result = prometheus.query(expr)
        assert result, f"no series for {expr}"
        for series in result:
            assert math.isfinite(float(series["value"][1])), (expr, series)
