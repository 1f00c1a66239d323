"""Backends for ``mirror doctor``: the runtime choice ``mirror run`` makes, as a report.

The choice is ``appliance.inference.runtime.choose_runtime`` (the profile's
backend order through ``choose_backend``, then every role's model resolved),
so the doctor and the running mirror cannot disagree. The chooser is
injectable for tests.

Each role that runs an ONNX file on onnxruntime is then loaded as ``mirror run``
loads it, and ``sessions`` says which execution providers its session really got
(``session.get_providers()``): onnxruntime can drop TensorRT or CUDA per model,
which the backend's probe cannot see. (On TensorRT a model without a cached
engine has it built here first: minutes, once, into the cache the mirror uses.)
"""

from __future__ import annotations

import logging

from appliance.backend_names import ONNX_BACKENDS
from appliance.device.match import MatchResult
from appliance.device.report import AttemptReport, BackendsReport, SessionReport
from appliance.errors import MirrorError
from appliance.inference.fallbacks import fallbacks
from appliance.inference.onnx_backend import OnnxBackend
from appliance.inference.runtime import AttemptLike, Chooser, RuntimeChoice, choose_runtime
from appliance.modelstore import ModelStore

logger = logging.getLogger(__name__)

__all__ = ["AttemptLike", "Chooser", "check_backends"]


def _fallback_lines(choice: RuntimeChoice | None) -> list[str]:
    """The choice's fallbacks first, then any other recorded in this process."""
    lines = [f.describe() for f in choice.fallbacks] if choice else []
    lines += [text for text in (f.describe() for f in fallbacks()) if text not in lines]
    return lines


def check_backends(
    match: MatchResult, store: ModelStore, chooser: Chooser | None = None
) -> tuple[RuntimeChoice | None, BackendsReport]:
    """The runtime choice for ``match`` and its report; no choice when no backend works."""
    order = list(match.profile.backends)
    try:
        choice = choose_runtime(match, store, chooser=chooser)
    except MirrorError as exc:
        logger.info("no backend works: %s", exc)
        failed = AttemptReport(name="(all)", ok=False, reason=" ".join(str(exc).split()))
        report = BackendsReport(
            order=order, chosen=None, attempts=[failed], fallbacks=_fallback_lines(None)
        )
        return None, report
    attempts = [AttemptReport(name=a.name, ok=a.ok, reason=a.reason) for a in choice.attempts]
    sessions = session_reports(choice)  # before the fallbacks: a session records its own
    report = BackendsReport(
        order=order,
        chosen=choice.backend,
        attempts=attempts,
        fallbacks=_fallback_lines(choice),
        sessions=sessions,
    )
    return choice, report


def session_reports(choice: RuntimeChoice) -> list[SessionReport]:
    """Load each role that runs an ONNX file on onnxruntime; what its session runs on."""
    reports = []
    for role in choice.roles:
        onnx = role.backend in ONNX_BACKENDS and isinstance(role.loader, OnnxBackend)
        if not onnx or role.file is None or role.file.suffix != ".onnx":
            continue
        try:
            model = role.load()
        except MirrorError as exc:
            logger.info("%s: no session: %s", role.role, exc)
            reports.append(
                SessionReport(
                    role=role.role, file=str(role.file), asked=[], providers=[], error=str(exc)
                )
            )
            continue
        asked = list(getattr(model, "asked", ()))
        providers = list(getattr(model, "providers", ()))
        model.close()
        reports.append(
            SessionReport(role=role.role, file=str(role.file), asked=asked, providers=providers)
        )
    return reports
