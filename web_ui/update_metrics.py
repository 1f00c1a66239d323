"""The ``/metrics`` families of A/B updates.

``mirror_update_in_progress`` (1 while the installer's status file says an update is
under way in this boot) and ``mirror_update_failed`` (1 when its last status is
"failed"), from ``<data dir>/updates/status.json``; ``mirror_slot_info{slot, version,
state, boot_good} 1`` per A/B slot, from RAUC (:mod:`web_ui.slots_cache`: absent
without RAUC). ``version`` is "" for a slot as flashed (no bundle installed into it).
"""

from __future__ import annotations

import logging

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from appliance.updates.queue import UpdateStatus
from appliance.updates.recent import under_way
from appliance.updates.slots import SlotsStatus
from web_ui.metrics import PREFIX

logger = logging.getLogger(__name__)


def update_families(status: UpdateStatus | None, slots: SlotsStatus | None) -> list[Metric]:
    families: list[Metric] = [
        GaugeMetricFamily(
            PREFIX + "update_in_progress",
            "1 while an A/B update is being checked, downloaded or installed, or reboots",
            value=float(under_way(status)),
        ),
        GaugeMetricFamily(
            PREFIX + "update_failed",
            "1 when the last A/B update failed (until the next one starts)",
            value=float(status is not None and status.state == "failed"),
        ),
    ]
    if slots is not None:
        info = GaugeMetricFamily(
            PREFIX + "slot_info",
            "Each A/B slot: its version (empty as flashed), RAUC's state and boot status",
            labels=["slot", "version", "state", "boot_good"],
        )
        for slot in slots.slots:
            good = "true" if slot.boot_good else "false"
            info.add_metric([slot.bootname or slot.name, slot.version, slot.state, good], 1.0)
        families.append(info)
    return families
