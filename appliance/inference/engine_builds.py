"""Which of the runtime choice's models will have a TensorRT engine built when they load.

TensorRT builds an engine for each model the first time it runs one (minutes on a
small GPU; once per model, TensorRT and onnxruntime version, then it is cached under
``<data dir>/trt-cache``). ``mirror run`` asks this before it loads the models, to say
so and to show the "preparing" screen while it happens.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from appliance.inference.onnx_backend import OnnxBackend
from appliance.inference.runtime_models import RoleChoice

logger = logging.getLogger(__name__)


def engines_to_build(roles: Iterable[RoleChoice]) -> list[str]:
    """The ONNX files among ``roles`` that TensorRT has no cached engine for yet."""
    pending: list[str] = []
    for role in roles:
        loader, source = role.loader, role.source
        if not isinstance(loader, OnnxBackend) or source is None or source.suffix != ".onnx":
            continue
        if source.name not in pending and loader.needs_engine_build(source):
            pending.append(source.name)
    if pending:
        logger.info("TensorRT engines to build: %s", ", ".join(pending))
    return pending
