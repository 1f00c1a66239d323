"""The record of ONNX variants made at provisioning, and verified access to them.

``<model cache>/onnx/variants.json`` lists each variant made by ``mirror models
convert`` (on a device: made where its bundle was built, and copied from it by
``mirror provision``): its file and sha256, the source it was made from and that source's
sha256, the tool and, for int8 variants, the measured landmark error. Int8
variants that failed the accuracy gate are listed as rejected, with the reason.
A variant is handed out only while its file matches the recorded sha256 and its
source is still the file the manifest pins.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from appliance.errors import ConfigError, ModelError, ModelHashError, ModelMissingError
from appliance.fileio import atomic_write_text
from appliance.modelstore.hashing import sha256_file
from appliance.modelstore.store import ModelStore

logger = logging.getLogger(__name__)

RECORD_FILE = "variants.json"
# on a device the variants come in its bundle (made where it is built: provisioning.onnx_steps)
CONVERT_HINT = (
    "run `mirror models convert` (a device: provision it from a bundle built with --profile)"
)
Precision = Literal["fp32", "int8"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Variant(_Strict):
    model: str = Field(description="manifest name of the model it stands for")
    precision: Precision
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    source: str = Field(description="file it was made from")
    source_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool: str
    max_error_px: float | None = Field(None, description="int8: worst landmark error vs fp32")


class Rejected(_Strict):
    model: str
    source_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool: str
    max_error_px: float
    reason: str


class VariantRecord(_Strict):
    format: Literal[1] = 1
    variants: dict[str, Variant] = Field(default_factory=dict)
    rejected: dict[str, Rejected] = Field(default_factory=dict)


def variant_key(model: str, precision: Precision) -> str:
    return model if precision == "fp32" else f"{model}.{precision}"


class OnnxVariants:
    """The ``onnx/`` folder of the model cache (or ``directory``) and its record."""

    def __init__(self, store: ModelStore, directory: Path | None = None) -> None:
        self.store = store
        self.directory = directory or store.cache_dir / "onnx"

    @property
    def record_path(self) -> Path:
        return self.directory / RECORD_FILE

    def read(self) -> VariantRecord:
        try:
            text = self.record_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return VariantRecord()
        except OSError as exc:
            raise ConfigError(f"cannot read {self.record_path}: {exc}") from exc
        try:
            return VariantRecord.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(f"invalid variant record {self.record_path}: {exc}") from exc

    def write(self, record: VariantRecord) -> None:
        text = json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        atomic_write_text(self.record_path, text)

    def is_current(self, variant: Variant | None, source_sha256: str) -> bool:
        """True when ``variant`` was made from this source and its file is intact."""
        if variant is None or variant.source_sha256 != source_sha256:
            return False
        path = self.directory / variant.file
        return path.is_file() and sha256_file(path) == variant.sha256

    def path(self, model: str, precision: Precision = "fp32") -> Path:
        """The path of a verified variant; a missing, stale or altered one is refused."""
        key = variant_key(model, precision)
        record = self.read()
        variant = record.variants.get(key)
        if variant is None:
            why = record.rejected.get(key)
            if why is not None:
                raise ModelMissingError(f"{key}: no ONNX variant, it was rejected: {why.reason}")
            raise ModelMissingError(f"{key}: no ONNX variant in {self.directory}; {CONVERT_HINT}")
        self._check_source(key, variant, record)
        path = self.directory / variant.file
        if not path.is_file():
            raise ModelMissingError(f"{key}: ONNX variant {path} is missing; {CONVERT_HINT}")
        actual = sha256_file(path)
        if actual != variant.sha256:
            raise ModelHashError(
                f"{key}: ONNX variant {path} has sha256 {actual}, recorded {variant.sha256}; "
                f"not loaded; {CONVERT_HINT}"
            )
        return path

    def _check_source(self, key: str, variant: Variant, record: VariantRecord) -> None:
        pinned = self.store.manifest.entry(variant.model).sha256
        if variant.precision == "fp32":
            current = pinned
        else:
            parent = record.variants.get(variant.model)
            current = parent.sha256 if parent and parent.source_sha256 == pinned else ""
        if variant.source_sha256 != current:
            raise ModelError(
                f"{key}: ONNX variant was made from another {variant.source} "
                f"(sha256 {variant.source_sha256}); not loaded; {CONVERT_HINT}"
            )
