"""Whether the mirror can run on a matched device at all, before anything is tried.

Two things refuse a device, each with one line that says why and what to do: a
profile marked ``unsupported`` (the Jetson Xavier NX: its last JetPack is 5, with
Python 3.8), and a Jetson profile on a JetPack older than 6 (read from
``/etc/nv_tegra_release``). ``mirror doctor`` reports it as its problem, ``mirror run``
and ``mirror provision`` stop with it.
"""

from __future__ import annotations

import logging

from appliance.device.facts import HardwareFacts
from appliance.device.jetpack import parse_release, unsupported_reason
from appliance.device.profile import HardwareProfile

logger = logging.getLogger(__name__)


def refusal(profile: HardwareProfile, facts: HardwareFacts) -> str | None:
    """Why the mirror cannot run with ``profile`` on the device of ``facts``; None if it can."""
    if profile.unsupported is not None:
        return f"profile {profile.name} is not supported: {profile.unsupported}"
    if profile.match.tegra_release and facts.tegra_release is not None:
        why = unsupported_reason(parse_release(facts.tegra_release))
        if why is not None:
            return f"profile {profile.name} cannot run here: {why}"
    return None
