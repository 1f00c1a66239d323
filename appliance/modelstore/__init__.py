"""The model manifest, the verified model cache and the offline fetcher."""

from appliance.modelstore.manifest import (
    Entry,
    Manifest,
    PackageSpec,
    ProvidedEntry,
    load_manifest,
)
from appliance.modelstore.store import ModelStore

__all__ = ["Entry", "Manifest", "ModelStore", "PackageSpec", "ProvidedEntry", "load_manifest"]
