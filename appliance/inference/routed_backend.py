"""A ``Backend`` that loads each model the way the runtime choice resolved its role.

``FaceAnalyzer.from_store`` asks for models by their verified tflite paths
(and for extra landmark models by the loaded model's path). This backend
maps either path to its role, so the detector can run as an ONNX variant on
onnxruntime while the landmarks stay on LiteRT; a file no role names loads on
``default`` (LiteRT on the CPU).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from appliance.inference.base import Backend, Model
from appliance.inference.runtime_models import RoleChoice
from appliance.modelstore import ModelStore

logger = logging.getLogger(__name__)


class RoutedBackend:
    """Routes ``load(path)`` to the role whose tflite file or running file is ``path``."""

    name = "runtime"

    def __init__(self, roles: Iterable[RoleChoice], store: ModelStore, default: Backend) -> None:
        self.default = default
        self._routes: dict[Path, RoleChoice] = {}
        entries = store.manifest.entries()
        for role in roles:
            if role.loader is None or role.base is None or role.base not in entries:
                continue
            self._routes.setdefault(store.file_path(role.base), role)
            if role.file is not None:
                self._routes.setdefault(role.file, role)

    def load(self, path: Path) -> Model:
        role = self._routes.get(Path(path))
        if role is None:
            logger.debug("%s is in no role: loading it on %s", path, self.default.name)
            return self.default.load(path)
        logger.debug("%s: %s", path.name, role.describe())
        return role.load()
