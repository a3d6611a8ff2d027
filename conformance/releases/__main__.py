"""``python -m conformance.releases``: build the per-release environments of an engine, and check that they import.

Usage::

    python -m conformance.releases envs --engine NAME                      # every release the engine lists
    python -m conformance.releases envs --engine NAME --versions A,B --check
    python -m conformance.releases envs --engine NAME --check --modules PKG.MOD,PKG.OTHER
    python -m conformance.releases history --engine sglang --engine vllm   # snapshots, diffs, live checks, report
    python -m conformance.releases matrix --engine sglang                  # the gate in every release: docs/findings/gate-sglang.md

``envs`` builds each release's environment (once; see
:mod:`conformance.releases.environments` for the cache and the layout) and
prints one line per release. With ``--check`` it then runs, in each
environment, ``python -m conformance.releases probe``, which resolves each of
the engine's message families (its ``roots`` and ``ext_types``) and imports
the ``--modules`` named, and the line says ``ok`` or what failed. A module or
family that the release does not have yet (``ModuleNotFoundError`` for a module
of the engine's own package) is reported as ``absent``, not as a failure;
any other import error (a missing dependency) is one. Exit status 0 only
when every release built and, with ``--check``, imported.

Building every release of every built-in engine from an empty cache::

    for e in sglang vllm; do python -m conformance.releases envs --engine $e --check; done
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Sequence

from conformance.engines import ENGINES, Engine, FamilyNotInRelease, family_absent, find_engine

from .environments import ReleaseEnvironmentError, environment, environment_path, run_in_environment, select_releases

PROBE_PREFIX = "PROBE "
CHECK_TIMEOUT = 900.0


#: The engine ``--engine`` names, imported but not set up (its package lives in each release's environment).
engine_without_setup = find_engine


# --- inside an environment ----------------------------------------------------------------------


def _outcome(exc: BaseException, package: Optional[str]) -> Dict[str, Any]:
    if family_absent(exc, package):
        return {"status": "absent", "detail": str(exc) if isinstance(exc, FamilyNotInRelease) else f"no module {getattr(exc, 'name', None)}"}
    # The deepest frame outside the import machinery: the line that asked for what is missing.
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename and not f.filename.startswith("<")]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return {"status": "failed", "detail": f"{type(exc).__name__}: {exc}{where}"}


def probe(engine: Engine, modules: Sequence[str]) -> List[Dict[str, Any]]:
    """In the release's environment: resolve each family and import each module; one record each."""
    records: List[Dict[str, Any]] = []
    items: List[Any] = [("package", engine.package, lambda: importlib.import_module(engine.package or ""))] if engine.package else []
    for family in engine.families:
        items.append(("family", family.name, family.roots))
        items.append(("ext", family.name, family.ext_types))
    for module in modules:
        items.append(("module", module, lambda module=module: importlib.import_module(module)))
    for kind, name, call in items:
        try:
            value = call()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the probe
            records.append({"kind": kind, "name": name, **_outcome(exc, engine.package)})
            continue
        record: Dict[str, Any] = {"kind": kind, "name": name, "status": "ok"}
        if kind == "family":
            record["detail"] = f"{len(value)} types"
        elif kind == "ext":
            record["detail"] = "ext " + ",".join(f"{code}={what}" for code, what in sorted(value.items()))
        records.append(record)
    return records


# --- the command --------------------------------------------------------------------------------


def _summary(records: Sequence[Dict[str, Any]]) -> str:
    failed = [r for r in records if r["status"] == "failed"]
    if failed:
        return "FAILED import check: " + "; ".join(f"{r['name']}: {r['detail']}" for r in failed)
    parts = []
    for r in records:
        if r["kind"] == "package":
            continue
        text = f"{r['name']} {r['status']}"
        if r["status"] == "absent" or r.get("detail"):
            text += f" ({r.get('detail')})"
        parts.append(text)
    return "ok" + (": " + ", ".join(parts) if parts else "")


def _check(python: str, spec: str, modules: Sequence[str]) -> str:
    argv = ["-m", "conformance.releases", "probe", "--engine", spec]
    if modules:
        argv += ["--modules", ",".join(modules)]
    out = run_in_environment(python, argv, timeout=CHECK_TIMEOUT)
    lines = [line for line in out.splitlines() if line.startswith(PROBE_PREFIX)]
    if not lines:
        raise ReleaseEnvironmentError(python, "import check", "the probe printed no result", out)
    return _summary(json.loads(lines[-1][len(PROBE_PREFIX):]))


def _envs(args: argparse.Namespace) -> int:
    engine = engine_without_setup(args.engine)
    releases = select_releases(engine, args.versions)
    if not releases:
        print(f"{engine.name}: no releases listed (Engine.releases)", file=sys.stderr)
        return 1
    modules = [m.strip() for m in (args.modules or "").split(",") if m.strip()]
    failures = 0
    started = time.monotonic()

    def log(line: str) -> None:
        if args.verbose:
            print(f"  {line}", flush=True)

    for release in releases:
        began = time.monotonic()
        label = f"{engine.name} {release.version}"
        try:
            python = environment(engine, release, cache=args.cache, log=log)
            line = "built" if not args.check else _check(python, args.engine, modules)
        except ReleaseEnvironmentError as exc:
            failures += 1
            last = exc.output.splitlines()[-1:] if exc.output else []
            line = f"FAILED {exc.step}: {exc.message}" + (f": {last[0].strip()}" if last else "")
            if args.verbose and exc.output:
                print("\n".join("    | " + out for out in exc.output.splitlines()), flush=True)
        else:
            failures += not line.startswith(("ok", "built"))
        print(f"{label}: {line}  [{time.monotonic() - began:.0f} s, {environment_path(engine, release, args.cache)}]", flush=True)
    print(f"{len(releases) - failures}/{len(releases)} {engine.name} environments ok, {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failures else 0


def _probe(args: argparse.Namespace) -> int:
    engine = engine_without_setup(args.engine)
    modules = [m.strip() for m in (args.modules or "").split(",") if m.strip()]
    print(PROBE_PREFIX + json.dumps(probe(engine, modules)), flush=True)
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance.releases", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    envs = sub.add_parser("envs", help="build (once) and optionally check the per-release environments of an engine")
    envs.add_argument("--engine", required=True, help=f"{', '.join(sorted(ENGINES))} or MODULE:ATTR")
    envs.add_argument("--versions", help="comma-separated releases (default: every release the engine lists)")
    envs.add_argument("--check", action="store_true", help="import each family's modules (and --modules) in each environment")
    envs.add_argument("--modules", help="comma-separated modules to import too with --check")
    envs.add_argument("--cache", help="cache directory (default $IPC_CONFORMANCE_RELEASES_CACHE or ~/.cache/ipc-conformance/releases)")
    envs.add_argument("-v", "--verbose", action="store_true", help="say what each build does")
    pr = sub.add_parser("probe", help="(run inside an environment) resolve the engine's families and import modules; prints one JSON line")
    pr.add_argument("--engine", required=True)
    pr.add_argument("--modules")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["history"]:
        from .history import main as history

        return history(argv[1:])
    if argv[:1] == ["matrix"]:
        from .matrix import main as matrix

        return matrix(argv[1:])
    args = _parser().parse_args(argv)
    return _envs(args) if args.command == "envs" else _probe(args)


if __name__ == "__main__":
    sys.exit(main())
