"""The release history: a schema snapshot of every release of an engine, each consecutive pair diffed and its breaks confirmed live, as a report.

For each release an engine lists (:attr:`~conformance.engines.profile.Engine.releases`):

1. **Snapshot.** In the release's own environment
   (:func:`~conformance.releases.environments.environment`), ``python -m
   conformance.schema_diff snapshot --engine NAME`` writes
   ``<snapshots_dir>/<name>-<version>.json`` from the release's runtime
   classes. A snapshot already on disk is kept (``--refresh`` rewrites it):
   they are checked in, and an engine's CI compares its working tree with the
   last one (``--against``).
2. **Diff.** Each consecutive pair of snapshots is compared
   (:func:`~conformance.schema_diff.compare`): every change, with its
   direction and the receiver's predicted fate.
3. **Live.** For every message type a pair's diff says breaks, the older
   release's own codec and the newer one's talk through two
   :mod:`~conformance.releases.host` processes, one per environment, and a
   witness is searched in each breaking direction
   (:func:`~conformance.releases.confirm.confirm_messages`).
4. **Report.** ``docs/findings/releases.md``: per pair, every breaking
   change with struct, field, kind, direction, prediction and what was seen
   live; and a JSON twin for tools.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from conformance import provenance
from conformance.engines.profile import Engine, Release
from conformance.schema_diff.compare import OK, Change, Comparison, compare
from conformance.schema_diff.snapshot import load

from .confirm import HostProcess, Observation, annotate, confirm_messages
from .environments import environment, run_in_environment

__all__ = ["snapshot_path", "take_snapshots", "PairResult", "compare_pair", "render", "REPORT_PATH"]

#: Where ``python -m conformance.releases history`` writes its report, relative to the repository.
REPORT_PATH = os.path.join("docs", "findings", "releases.md")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def snapshot_path(engine: Engine, version: str) -> str:
    """The checked-in snapshot of ``engine`` at ``version``."""
    if not engine.snapshots_dir:
        raise ValueError(f"engine {engine.name!r} keeps no snapshots (Engine.snapshots_dir)")
    return os.path.join(engine.snapshots_dir, f"{engine.name}-{version}.json")


def take_snapshots(engine: Engine, releases: Sequence[Release], *, refresh: bool = False, log=print) -> Dict[str, str]:
    """Write the snapshot of each release in its own environment (kept when on disk, unless ``refresh``); version -> path."""
    paths: Dict[str, str] = {}
    for release in releases:
        path = snapshot_path(engine, release.version)
        paths[release.version] = path
        if os.path.exists(path) and not refresh:
            continue
        python = environment(engine, release, log=log)
        started = time.monotonic()
        run_in_environment(python, ["-m", "conformance.schema_diff", "snapshot", "--engine", engine.name, "--release", release.version, "--out", path], timeout=900, cwd=_ROOT)
        log(f"{engine.name} {release.version}: snapshot written in {time.monotonic() - started:.1f} s ({os.path.relpath(path, _ROOT)})")
    return paths


@dataclass
class PairResult:
    """One consecutive pair: the diff, what was seen live, and how long each took."""

    engine: str
    old: str
    new: str
    comparison: Comparison
    observations: List[Observation] = field(default_factory=list)
    diff_seconds: float = 0.0
    live_seconds: Optional[float] = None
    live_error: str = ""

    def annotated(self) -> List[Tuple[Change, str]]:
        return annotate(self.comparison.changes, self.observations)


def compare_pair(engine: Engine, old: Release, new: Release, *, live: bool = True, max_examples: int = 100, log=print) -> PairResult:
    """Diff two releases' snapshots and, with ``live``, confirm every break through both releases' own codecs."""
    started = time.monotonic()
    a, b = load(snapshot_path(engine, old.version)), load(snapshot_path(engine, new.version))
    comparison = compare(a, b, old_name=f"{engine.name} {old.version}", new_name=f"{engine.name} {new.version}")
    result = PairResult(engine.name, old.version, new.version, comparison, diff_seconds=time.monotonic() - started)
    breaking = comparison.breaking("full")
    if not live or not breaking:
        return result
    started = time.monotonic()
    by_family: Dict[str, List[str]] = {}
    for change in breaking:
        if change.kind.startswith("family") or change.kind.startswith("ext code") or change.kind == "framing changed":
            continue
        family = change.family or next(iter(set(a.families) & set(b.families)), "")
        tags = by_family.setdefault(family, [])
        if change.tag not in tags:
            tags.append(change.tag)
    try:
        old_python, new_python = environment(engine, old, log=log), environment(engine, new, log=log)
        for family, tags in sorted(by_family.items()):
            with HostProcess(old_python, engine.name, family) as old_host, HostProcess(new_python, engine.name, family) as new_host:
                result.observations += confirm_messages(family, tags, {"old": a, "new": b}, {"old": old_host, "new": new_host}, max_examples=max_examples)
    except Exception as exc:  # a host that cannot start: the pair is reported as not confirmed live, with why
        result.live_error = f"{type(exc).__name__}: {exc}"[:1000]
    # Observations of a one-family comparison carry the family name; its changes carry "".
    if len(a.families) == 1 and len(b.families) == 1:
        result.observations = [replace(o, family="") for o in result.observations]
    result.live_seconds = time.monotonic() - started
    return result


def _cell(text: str, limit: int = 160) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _direction(change: Change) -> str:
    return {"both": "both", "backward": "old→new", "forward": "new→old"}.get(change.direction, change.direction)


def _predicted(change: Change) -> str:
    parts = []
    if change.backward != OK:
        parts.append(f"old→new {change.backward}")
    if change.forward != OK:
        parts.append(f"new→old {change.forward}")
    return "; ".join(parts)


def render(results: Sequence[PairResult], *, command: str, commit: str) -> str:
    """The Markdown report of ``results`` (consecutive pairs, grouped by engine)."""
    lines = [
        f"# The wire between releases: every break {' and '.join(dict.fromkeys(r.engine for r in results))} shipped",
        "",
        f"Generated by `{command}` at commit `{commit}` on {platform.machine()} {platform.system()}, Python {platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        "Each release's schema was recorded from its released wheel, in its own environment",
        "(`conformance/engines/<engine>/schemas/`); each consecutive pair was diffed",
        "(`python -m conformance.schema_diff OLD.json NEW.json --mode full --all`), and every",
        "message type the diff says breaks was sent live from one release's own encoder to the",
        "other's own decoder, both ways, with drawn messages (Hypothesis, shrunk to the smallest witness).",
        "",
        "* **old→new** (backward): the older release sends, the newer one receives: a rolling upgrade,",
        "  an older prefill server feeding a newer decode server.",
        "* **new→old** (forward): the newer release sends, a peer built against the older one receives: a",
        "  router, gateway or KV-event consumer that has not been rebuilt.",
        "* **refuses**: the receiver's decoder raises; **misreads**: it decodes without an error and a field",
        "  holds another field's value or a default instead of what was sent.",
        "* **seen live**: the symptom of the shrunk witness; `NOT SEEN`: no draw broke (the diff's",
        "  prediction was not confirmed; it says when the sender wrote the message inside another",
        "  top-level type, such as a pickled fallback, whose bytes the schema does not govern);",
        "  `not confirmable`: why no live check could be made.",
        "* The live search is per message type and direction: where a message has several breaking",
        "  changes, a row whose witness broke at another field says `not isolated`.",
        "* Receivers are the releases' own decoders (msgspec). \"ok\" for a field appended at the tail",
        "  assumes a receiver that skips trailing array elements, as msgspec does; a serde tuple struct",
        "  refuses them (see `docs/findings/rust-kv-events.md`).",
        "",
    ]
    engines: Dict[str, List[PairResult]] = {}
    for r in results:
        engines.setdefault(r.engine, []).append(r)
    for engine, pairs in engines.items():
        lines += [f"## {engine}", "", "| pair | message types compared | breaking (full) | old→new breaks | new→old breaks | seen live | diff s | live s |", "|---|---|---|---|---|---|---|---|"]
        for r in pairs:
            breaking = r.comparison.breaking("full")
            seen = sum(1 for _, text in r.annotated() if any(w in text for w in (": refuses", ": misreads")))
            live = "—" if r.live_seconds is None else f"{r.live_seconds:.0f}"
            lines.append(
                f"| {r.old} → {r.new} | {r.comparison.messages} | {len(breaking)} | {len(r.comparison.breaking('backward'))} | {len(r.comparison.breaking('forward'))} | {seen} | {r.diff_seconds:.2f} | {live} |"
            )
        lines.append("")
        for r in pairs:
            rows = r.annotated()
            lines += [f"### {engine} {r.old} → {r.new}", ""]
            if r.live_error:
                lines += [f"Live confirmation could not run: `{_cell(r.live_error, 400)}`", ""]
            if not rows:
                lines += ["No breaking change in either direction.", ""]
                continue
            lines += ["| family | where | field | kind | direction | predicted | seen live |", "|---|---|---|---|---|---|---|"]
            for change, live_text in rows:
                lines.append(
                    f"| {change.family or '—'} | {_cell(change.where, 90)} | {change.field or '—'} | {change.kind} | {_direction(change)} | {_predicted(change)} | {_cell(live_text or '—', 220)} |"
                )
            lines.append("")
            witnesses = [o for o in r.observations if o.witness]
            if witnesses:
                lines += ["<details><summary>Shrunk witnesses</summary>", ""]
                for o in witnesses:
                    lines.append(f"* {o.message} {'old→new' if o.direction == 'backward' else 'new→old'} ({o.outcome}, {o.draws} draws): `{_cell(o.witness, 300)}`")
                lines += ["", "</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def as_json(results: Sequence[PairResult]) -> List[Dict[str, Any]]:
    """The results for tools: per pair, every change with its live annotation."""
    out = []
    for r in results:
        live = dict((id(c), text) for c, text in r.annotated())
        out.append(
            {
                "engine": r.engine,
                "old": r.old,
                "new": r.new,
                "messages": r.comparison.messages,
                "structs": r.comparison.structs,
                "changes": [{**c.as_dict(), "seen_live": live.get(id(c), "")} for c in r.comparison.changes],
                "observations": [asdict(o) for o in r.observations],
                "live_error": r.live_error,
            }
        )
    return out


def write_report(results: Sequence[PairResult], path: str, *, command: str) -> None:
    commit = provenance.commit()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(results, command=command, commit=commit))
    with open(os.path.splitext(path)[0] + ".json", "w", encoding="utf-8") as fh:
        json.dump(as_json(results), fh, indent=1, sort_keys=True)
        fh.write("\n")



def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m conformance.releases history``: snapshots, diffs and live confirmations of every listed release, and the report."""
    import argparse

    from conformance.engines import find_engine

    parser = argparse.ArgumentParser(prog="python -m conformance.releases history", description=main.__doc__)
    parser.add_argument("--engine", action="append", required=True, help="an engine that lists its releases (repeatable)")
    parser.add_argument("--versions", help="only these releases, comma-separated (consecutive pairs among them)")
    parser.add_argument("--refresh", action="store_true", help="rewrite snapshots already on disk")
    parser.add_argument("--no-live", dest="live", action="store_false", help="diff only: no live confirmation")
    parser.add_argument("--max-examples", type=int, default=100, help="draws per message type and direction in the live search (default 100)")
    parser.add_argument("--out", default=os.path.join(_ROOT, REPORT_PATH), help=f"the report (default {REPORT_PATH}); a .json twin is written beside it")
    args = parser.parse_args(argv)
    results: List[PairResult] = []
    for name in args.engine:
        engine = find_engine(name)  # its package lives in each release's environment, not here
        releases = list(engine.releases)
        if args.versions:
            wanted = [v.strip() for v in args.versions.split(",") if v.strip()]
            unknown = sorted(set(wanted) - {r.version for r in releases})
            if unknown:
                parser.error(f"{name} lists no release {', '.join(unknown)}")
            releases = [r for r in releases if r.version in wanted]
        if len(releases) < 2:
            parser.error(f"{name}: a history needs two releases or more")
        take_snapshots(engine, releases, refresh=args.refresh)
        for old, new in zip(releases, releases[1:]):
            result = compare_pair(engine, old, new, live=args.live, max_examples=args.max_examples)
            live = "" if result.live_seconds is None else f", live {result.live_seconds:.0f} s"
            print(f"{name} {old.version} -> {new.version}: {len(result.comparison.breaking('full'))} breaking change(s) in {result.comparison.messages} message types (diff {result.diff_seconds:.2f} s{live}){' LIVE FAILED: ' + result.live_error if result.live_error else ''}")
            results.append(result)
    command = "python -m conformance.releases history " + " ".join(f"--engine {n}" for n in args.engine) + ("" if args.live else " --no-live")
    write_report(results, args.out, command=command)
    print(f"wrote {os.path.relpath(args.out)}")
    return 0
