"""The manifest of every model and asset: where it comes from and its sha256."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from appliance.errors import ConfigError
from appliance.paths import manifest_path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PackageSpec(_Strict):
    version: str
    licence: str
    container_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    platforms: tuple[str, ...] = ()
    python_version: str | None = None


class Entry(_Strict):
    kind: Literal["model", "photo", "font"]
    role: str
    package: str
    wheel_path: str
    member: str | None = None
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    contract: dict[str, Any] | None = None


class Manifest(_Strict):
    packages: dict[str, PackageSpec]
    models: dict[str, Entry]
    assets: dict[str, Entry]

    @model_validator(mode="after")
    def _packages_known(self) -> Manifest:
        for name, entry in self.entries().items():
            if entry.package not in self.packages:
                raise ValueError(f"{name}: package {entry.package!r} is not listed in packages")
        return self

    def entries(self) -> dict[str, Entry]:
        return {**self.models, **self.assets}

    def entry(self, name: str) -> Entry:
        try:
            return self.entries()[name]
        except KeyError:
            known = ", ".join(sorted(self.entries()))
            raise ConfigError(f"unknown model or asset {name!r} (known: {known})") from None


def load_manifest(path: Path | None = None) -> Manifest:
    path = path or manifest_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Manifest.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read model manifest {path}: {exc}") from exc
    except ValidationError as exc:
        raise ConfigError(f"invalid model manifest {path}: {exc}") from exc
