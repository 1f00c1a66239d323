"""Models for ``mirror doctor``: every manifest file's sha256, and each role's model.

A role names a manifest model (verified here), a variant of one such as
``face_detector_short.onnx`` or ``face_detector_short_edgetpu`` (its base is
verified; the runtime builds or picks the variant), a built-in (``geometric``),
or a model an installer provisions that the manifest does not list.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from appliance.device.report import ModelFileReport, ModelsReport, ModelStatus, RoleReport
from appliance.modelstore import ModelStore
from appliance.modelstore.store import VerifyResult

logger = logging.getLogger(__name__)

BUILTIN_MODELS = {"geometric": "the embedded geometric swapper (no model file)"}
_STATUS: dict[str, ModelStatus] = {"ok": "ok", "missing": "missing", "bad-hash": "bad-hash"}


def base_model(name: str, known: Mapping[str, object]) -> str | None:
    """The longest manifest name that ``name`` extends with ``.`` or ``_``."""
    bases = [
        base
        for base in known
        if name.startswith(base) and len(name) > len(base) and name[len(base)] in "._"
    ]
    return max(bases, key=len) if bases else None


def _file(result: VerifyResult) -> ModelFileReport:
    return ModelFileReport(
        name=result.name,
        path=str(result.path),
        status=_STATUS.get(result.status, "missing"),
        expected_sha256=result.expected_sha256,
        actual_sha256=result.actual_sha256,
    )


def _status_detail(result: VerifyResult) -> str:
    if result.status == "ok":
        return "sha256 verified"
    if result.status == "bad-hash":
        return f"sha256 {result.actual_sha256} does not match; moved to {result.moved_to}"
    return f"{result.path} is missing"


def _role(role: str, model: str, results: Mapping[str, VerifyResult]) -> RoleReport:
    if model in BUILTIN_MODELS:
        return RoleReport(role=role, model=model, status="builtin", detail=BUILTIN_MODELS[model])
    if model in results:
        found = results[model]
        status = _file(found).status
        return RoleReport(role=role, model=model, status=status, detail=_status_detail(found))
    base = base_model(model, results)
    if base is not None:
        found = results[base]
        if found.status != "ok":
            status = _file(found).status
            return RoleReport(
                role=role,
                model=model,
                status=status,
                detail=f"base {base}: {_status_detail(found)}",
            )
        return RoleReport(
            role=role,
            model=model,
            status="variant",
            detail=f"variant of {base} (sha256 verified); the runtime builds or picks it",
        )
    return RoleReport(
        role=role,
        model=model,
        status="not-installed",
        detail="not in the model manifest: an installer must provision it",
    )


def check_models(store: ModelStore, roles: Mapping[str, str]) -> ModelsReport:
    """Verify every manifest file (a corrupt one is moved aside) and resolve each role."""
    results = {result.name: result for result in store.verify_all()}
    return ModelsReport(
        cache_dir=str(store.cache_dir),
        files=[_file(result) for result in results.values()],
        roles=[_role(role, model, results) for role, model in roles.items()],
    )
