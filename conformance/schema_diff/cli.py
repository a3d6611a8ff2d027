"""``python -m conformance.schema_diff``: compare two versions of an engine's wire schema, or write a snapshot of one.

Compare (exit 0: compatible in the mode, 1: breaking, 2: the comparison
could not be made)::

    python -m conformance.schema_diff OLD NEW [--mode backward|forward|full] [--all] [--json]
    python -m conformance.schema_diff --against OLD.json --engine vllm      # this checkout against the last release
    python -m conformance.schema_diff --transitive S1.json S2.json ... SN.json

Each side is a snapshot file (``*.json``, written by the command below), a
module (its string-tagged ``msgspec.Struct`` messages are discovered; with
``--roots A,B`` the untagged classes named are the messages, as vLLM's are),
``MODULE:ATTR`` naming a ``name -> class`` mapping, or ``--engine NAME`` (the
engine's message families, from the release installed in this process; it is
the NEW side). ``--mode`` picks which direction fails the check (default
``backward``: can the new release read what the last one sends);
``--transitive`` checks the last snapshot against every earlier one.

It always says how many message types and structs it compared, and refuses
(exit 2) to judge a comparison of nothing, such as a module with no tagged
classes and no ``--roots``.

Write a snapshot::

    python -m conformance.schema_diff snapshot --engine vllm --out schemas/vllm-0.34.0.json
    python -m conformance.schema_diff snapshot my_engine.messages --roots Request,Output --out snap.json
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Mapping, Optional, Tuple

from .compare import MODES, Comparison, compare, summary_line
from .snapshot import Snapshot, SnapshotError, dumps, engine_snapshot, load, module_roots, module_snapshot, write

__all__ = ["main", "load_schema", "resolve"]


def load_schema(spec: str) -> Mapping[str, type]:
    """``MODULE`` (its tagged messages, discovered) or ``MODULE:ATTR`` (a mapping, or a module) as ``name -> class`` of this process."""
    return module_roots(spec)


def _roots(text: Optional[str]) -> Optional[List[str]]:
    return [r.strip() for r in text.split(",") if r.strip()] if text else None


def resolve(spec: str, roots: Optional[List[str]] = None) -> Snapshot:
    """A snapshot file (``*.json``) or a module spec as a :class:`Snapshot`."""
    if spec.endswith(".json"):
        return load(spec)
    return module_snapshot(spec, roots)


def _engine(name: str, release: Optional[str], families: Optional[List[str]]) -> Snapshot:
    from conformance.engines import EngineSelectionError, load_engine

    try:
        engine = load_engine(name)
    except EngineSelectionError as exc:
        raise SnapshotError(str(exc)) from exc
    return engine_snapshot(engine, release=release, families=families)


def _label(spec: str, snapshot: Snapshot) -> str:
    return f"{snapshot.engine} {snapshot.release}" if spec.endswith(".json") or spec.startswith("engine:") else spec


def _snapshot_main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.schema_diff snapshot", description="write a schema snapshot (JSON) of an engine's families or of a module")
    parser.add_argument("module", nargs="?", help="MODULE or MODULE:ATTR (instead of --engine)")
    parser.add_argument("--engine", help="an engine's message families, from the release installed here")
    parser.add_argument("--roots", help="the untagged message classes of MODULE, comma-separated")
    parser.add_argument("--family", action="append", help="only this family of the engine (repeatable)")
    parser.add_argument("--release", help="the release to record (default: the installed version of the engine's package)")
    parser.add_argument("--out", help="the file to write (default: standard output)")
    args = parser.parse_args(argv)
    if bool(args.module) == bool(args.engine):
        parser.error("name one of MODULE or --engine NAME")
    try:
        snapshot = _engine(args.engine, args.release, args.family) if args.engine else module_snapshot(args.module, _roots(args.roots))
    except SnapshotError as exc:
        print(f"schema_diff snapshot: {exc}", file=sys.stderr)
        return 2
    for name, why in snapshot.absent.items():
        print(f"schema_diff snapshot: family {name!r} not recorded: {why}", file=sys.stderr)
    if args.out:
        write(snapshot, args.out)
        print(f"wrote {args.out}: {snapshot.engine} {snapshot.release}, {snapshot.message_count()} message types in {len(snapshot.families)} families, {len(snapshot.structs)} structs", file=sys.stderr)
    else:
        sys.stdout.write(dumps(snapshot))
    return 0


def _print(comparison: Comparison, mode: str, show_all: bool) -> None:
    breaking = comparison.breaking(mode)
    for change in comparison.changes if show_all else breaking:
        print(change)
    for change in comparison.changes:
        if change.kind == "family not compared" and not show_all:
            print(f"NOT COMPARED: {change.where}: {change.detail}")
    others = len(comparison.changes) - len(breaking)
    print(f"compared {comparison.messages} message types and {comparison.structs} structs: {len(breaking)} breaking change(s) ({mode}), {others} other")
    print(summary_line(comparison, mode))


def _report(comparison: Comparison, mode: str) -> dict:
    return {
        "old": comparison.old,
        "new": comparison.new,
        "mode": mode,
        "messages": comparison.messages,
        "structs": comparison.structs,
        "breaking": len(comparison.breaking(mode)),
        "changes": [c.as_dict() for c in comparison.changes],
    }


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["snapshot"]:
        return _snapshot_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m conformance.schema_diff", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("sides", nargs="*", metavar="SIDE", help="OLD then NEW: a snapshot file (*.json), MODULE, or MODULE:MAPPING")
    parser.add_argument("--engine", help="the NEW side: this engine's families, from the release installed here")
    parser.add_argument("--against", help="the OLD side (a snapshot file): the release to stay compatible with")
    parser.add_argument("--roots", help="untagged message classes of a MODULE side, comma-separated (an engine's roots)")
    parser.add_argument("--mode", choices=MODES, default="backward", help="which direction fails the check (default backward: new receivers read old senders)")
    parser.add_argument("--transitive", action="store_true", help="compare the last side with every earlier one (oldest first)")
    parser.add_argument("--all", action="store_true", help="print the changes that do not break in this mode too")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args(argv)
    specs = ([args.against] if args.against else []) + list(args.sides)
    try:
        sides: List[Tuple[str, Snapshot]] = [(spec, resolve(spec, _roots(args.roots))) for spec in specs]
        if args.engine:
            sides.append((f"engine:{args.engine}", _engine(args.engine, None, None)))
    except SnapshotError as exc:
        parser.exit(2, f"schema_diff: {exc}\n")
    if len(sides) < 2 or (len(sides) > 2 and not args.transitive):
        parser.error("give two sides (OLD NEW), or --transitive with two or more")
    newest_spec, newest = sides[-1]
    comparisons: List[Comparison] = []
    try:
        for spec, snapshot in sides[:-1]:
            comparisons.append(compare(snapshot, newest, old_name=_label(spec, snapshot), new_name=_label(newest_spec, newest)))
    except SnapshotError as exc:
        parser.exit(2, f"schema_diff: {exc}\n")
    failed = any(c.breaking(args.mode) for c in comparisons)
    if args.json:
        reports = [_report(c, args.mode) for c in comparisons]
        print(json.dumps(reports if args.transitive else reports[0], indent=1))
    else:
        for comparison in comparisons:
            _print(comparison, args.mode, args.all)
    return 1 if failed else 0
