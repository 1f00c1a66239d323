"""Provision the neural swappers from an installer's bundle: files, hashes, emap.

``provision_neural`` installs the ``provided`` files found in the bundle
(each sha256 checked against the manifest, unpinned ones refused) and writes
the emap beside each model that needs one, so the runtime needs only
onnxruntime and numpy. Meant for the installer's ``mirror models`` step.
"""

from __future__ import annotations

import logging
from pathlib import Path

from appliance.modelstore import ModelStore
from appliance.modelstore.provided import Progress, ProvidedReport, install_provided
from appliance.vision.neural.emap import emap_path, extract_emap

logger = logging.getLogger(__name__)


def provision_neural(
    store: ModelStore,
    bundle_dir: Path,
    progress: Progress | None = None,
    names: list[str] | None = None,
) -> ProvidedReport:
    """Install what the bundle has, then extract each installed model's emap."""
    say = progress or (lambda _msg: None)
    report = install_provided(store, bundle_dir, say, names)
    for name, entry in store.manifest.provided.items():
        if not entry.emap or (names is not None and name not in names):
            continue
        if store.verify_provided(name).status != "ok":
            continue
        model = store.provided_path(name)
        target = emap_path(model)
        if f"{name}/model" in report.installed or not target.exists():
            extract_emap(model, target)
            say(f"{name}/emap: {target.name} written")
    return report
