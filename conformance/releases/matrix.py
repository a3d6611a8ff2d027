"""The gate in every release of an engine: one verdict per release, and each finding with the release it appears in and the one that fixed it.

``python -m conformance.releases matrix --engine NAME`` runs, in each release's
own environment (:mod:`.environments`, built once and cached), the gate an
engine's CI runs on its development branch: ``python -m conformance --engine
NAME --codec NAME --failure-list LIST`` with the engine's list (the newest
under ``conformance/engines/NAME/failure_lists/``, or ``--failure-list``),
and writes ``docs/findings/gate-NAME.md``: per release the verdict, the
counts, the time to the verdict and the families the release lacks; then
every finding (a line of the list that the run met, or a new finding the
list does not name) with the releases that show it, the first of them, and
the release that fixed it (the first after the last that shows it).

Each release's result is kept in the release cache
(``<cache>/gate/<engine>-<version>-<key>.json``, the key a hash of this
checkout's packages, the list and the run's options), so an interrupted
matrix resumes where it stopped and a rerun after a docs change costs
nothing. It shards as CI jobs do: ``--versions V --result FILE`` runs one
release and writes its result; ``merge FILE... --out MD`` writes the table
from the shards (``examples/ci/ipc-conformance.yml``).

A release whose run cannot reach a verdict (no environment, a crash, no
closing line in the time allowed) is a row that says so; the matrix goes on.
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from conformance.engines import ENGINES, Engine, Release, find_engine

from .environments import ReleaseEnvironmentError, cache_root, environment, run_in_environment, select_releases

__all__ = ["ReleaseVerdict", "run_release", "render", "main", "default_failure_list", "GATE_TIMEOUT"]

#: Seconds a release's gate may take before its row says it reached no verdict.
GATE_TIMEOUT = 900.0
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PACKAGES = ("conformance", "reference_codec", "strategies")
_CLOSING = re.compile(r"^CONFORMANCE SUITE (PASSED|FAILED): .*$", re.M)
#: Bump when what a result holds changes: cached results are made again.
FORMAT = 1


@dataclass
class ReleaseVerdict:
    """One release's gate: its verdict (``PASSED``, ``FAILED``, or ``NO VERDICT``), counts, time and findings."""

    engine: str
    release: str
    verdict: str
    closing_line: str = ""
    counts: Dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: Findings the run met: ``{finding: {"line": N or None, "reason": ..., "tests": N}}`` (a list line's text, or a new finding).
    findings: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: Lines of the list this release did not meet (``not_met_at_this_release``, or fixed/stale at the recorded release).
    not_met: List[str] = field(default_factory=list)
    absent_families: Dict[str, str] = field(default_factory=dict)
    problem: str = ""
    command: str = ""
    format: int = FORMAT

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ReleaseVerdict":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def default_failure_list(engine: Engine) -> Optional[str]:
    """The engine's newest list in its ``failure_lists/`` folder (by name), or None."""
    folder = os.path.join(_ROOT, "conformance", "engines", engine.name, "failure_lists")
    found = sorted(glob.glob(os.path.join(folder, "*.txt")), key=lambda path: _version_key(os.path.basename(path)[len(engine.name) + 1 : -len(".txt")]))
    return found[-1] if found else None


@functools.lru_cache(maxsize=None)
def _checkout_digest() -> bytes:
    """A digest of this checkout's packages (their .py, .txt and .json files), read once per process."""
    digest = hashlib.sha256()
    for package in _PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(_ROOT, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(files):
                if name.endswith((".py", ".txt", ".json")):
                    path = os.path.join(folder, name)
                    digest.update(os.path.relpath(path, _ROOT).encode())
                    with open(path, "rb") as fh:
                        digest.update(fh.read())
    return digest.digest()


def _key(engine: Engine, release: Release, failure_list: Optional[str], options: Sequence[str]) -> str:
    """What a cached result depends on: this checkout's packages, the list, the options."""
    digest = hashlib.sha256(_checkout_digest())
    if failure_list:
        with open(failure_list, "rb") as fh:
            digest.update(fh.read())
    digest.update(json.dumps([engine.name, release.version, list(options), FORMAT]).encode())
    return digest.hexdigest()[:16]


def _cached_path(engine: Engine, release: Release, key: str, cache: Optional[str]) -> str:
    return os.path.join(cache_root(cache), "gate", f"{engine.name}-{release.version}-{key}.json")


def run_release(engine: Engine, release: Release, *, failure_list: Optional[str], options: Sequence[str] = (), cache: Optional[str] = None,
                reuse: bool = True, log=print) -> ReleaseVerdict:
    """The gate in ``release``'s environment (built if need be); a cached result of the same key when ``reuse``."""
    key = _key(engine, release, failure_list, options)
    cached = _cached_path(engine, release, key, cache)
    if reuse and os.path.exists(cached):
        with open(cached, encoding="utf-8") as fh:
            verdict = ReleaseVerdict.from_dict(json.load(fh))
        log(f"{engine.name} {release.version}: {verdict.verdict} (cached: {os.path.basename(cached)})")
        return verdict
    report = cached[: -len(".json")] + ".report.json"
    argv = ["-m", "conformance", "--engine", engine.name, "--codec", engine.name, "--report", report, *options]
    if failure_list:
        argv += ["--failure-list", failure_list]
    command = "python " + " ".join(a if a != report else "REPORT.json" for a in argv).replace(_ROOT + os.sep, "")
    verdict = ReleaseVerdict(engine.name, release.version, "NO VERDICT", command=command)
    began = time.monotonic()
    try:
        python = environment(engine, release, cache=cache)
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        output = run_in_environment(python, argv, timeout=GATE_TIMEOUT, cwd=_ROOT, ok_codes=(0, 1))
    except ReleaseEnvironmentError as exc:
        verdict.problem = f"{exc.step}: {exc.message}"
        tail = [line for line in (exc.output or "").splitlines() if line.strip()][-1:]
        if tail:
            verdict.problem += f" ({tail[0].strip()[:200]})"
        verdict.seconds = round(time.monotonic() - began, 1)
        log(f"{engine.name} {release.version}: NO VERDICT: {verdict.problem}")
        return verdict  # not cached: the next run tries again
    verdict.seconds = round(time.monotonic() - began, 1)
    closing = list(_CLOSING.finditer(output))
    if not closing or not os.path.exists(report):
        verdict.problem = "no closing line or report: " + (output.strip().splitlines() or [""])[-1][:200]
        log(f"{engine.name} {release.version}: NO VERDICT: {verdict.problem}")
        return verdict
    verdict.closing_line = closing[-1].group(0)
    verdict.verdict = closing[-1].group(1)
    _read_report(verdict, report)
    with open(cached, "w", encoding="utf-8") as fh:
        json.dump(asdict(verdict), fh, indent=1, sort_keys=True)
    log(f"{engine.name} {release.version}: {verdict.closing_line} [{verdict.seconds:.0f} s]")
    return verdict


def _read_report(verdict: ReleaseVerdict, path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    verdict.counts = data.get("counts", {})
    status = data.get("engine_status") or {}
    verdict.absent_families = dict(status.get("absent_families") or {})
    listed = data.get("failure_list") or {}
    for known in listed.get("known", ()):
        verdict.findings[known["finding"]] = {"line": known["line"], "reason": known.get("reason"), "tests": known.get("tests", 0)}
    for new in listed.get("new", ()):
        verdict.findings[new["finding"]] = {"line": None, "reason": "new: in no line of the list", "tests": new.get("tests", 0)}
    for key in ("not_met_at_this_release", "fixed", "stale"):
        verdict.not_met += [entry["finding"] for entry in listed.get(key, ())]


# --- the table ---------------------------------------------------------------------------------------


def _version_key(version: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def render(verdicts: Sequence[ReleaseVerdict], *, command: str, failure_lists: Dict[str, Optional[str]]) -> str:
    """The matrix as markdown: the provenance header, one row per release, then every finding across releases."""
    from conformance.provenance import header

    ordered = sorted(verdicts, key=lambda v: _version_key(v.release))
    engines = sorted({v.engine for v in ordered})
    out = [f"# The gate in every release: {', '.join(engines)}\n", header("release by release, each in its own environment", command)]
    listed = ", ".join(f"{e}: `{_shown_path(failure_lists.get(e))}`" for e in engines)
    out.append(
        f"Each release ran `python -m conformance --engine E --codec E --failure-list LIST` (lists: {listed}; its own classes, its own codec, "
        "the list an engine keeps in its tree): **PASSED** is the list's verdict there, lines not met at a release other than the "
        "recorded one are reported, not failed; **FAILED** means a finding the list does not name (a real difference of that "
        "release's codec, or its wire against the release before).\n"
    )
    out.append("| release | verdict | successes | skipped | expected failures | unexpected failures | findings met | lines not met | absent families | seconds |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for v in ordered:
        c = v.counts
        absent = "; ".join(f"{name} ({why[:80]})" for name, why in sorted(v.absent_families.items())) or "none"
        verdict = v.verdict if not v.problem else f"{v.verdict}: {v.problem[:120]}"
        out.append(
            f"| {v.engine} {v.release} | {verdict} | {c.get('successes', '')} | {c.get('skipped', '')} | {c.get('expected_failures', '')} | "
            f"{c.get('unexpected_failures', '')} | {len(v.findings)} | {len(v.not_met)} | {absent} | {v.seconds:.0f} |"
        )
    out.append("")
    for engine in engines:
        rows = [v for v in ordered if v.engine == engine and not v.problem]
        releases = [v.release for v in rows]
        seen: Dict[str, List[str]] = {}
        reasons: Dict[str, str] = {}
        for v in rows:
            for finding, about in v.findings.items():
                seen.setdefault(finding, []).append(v.release)
                reasons.setdefault(finding, about.get("reason") or "")
        out.append(f"## {engine}: each finding, the releases that show it\n")
        out.append("| finding | first seen | fixed in | releases that show it | in the list |")
        out.append("|---|---|---|---|---|")
        for finding, where in sorted(seen.items(), key=lambda kv: (releases.index(kv[1][0]), kv[0])):
            fixed = _fixed_in(finding, where, releases)
            shown = _ranges(where, releases)
            in_list = "no: new" if reasons[finding].startswith("new:") else "yes"
            out.append(f"| `{_cell(finding)}` | {where[0]} | {fixed} | {shown} | {in_list} |")
        out.append("")
    return "\n".join(out)


def _fixed_in(finding: str, where: Sequence[str], releases: Sequence[str]) -> str:
    """The first release after the last that shows ``finding``; what a finding of another nature says instead.

    A ``sometimes`` line shows in some draws only, so a release whose run did
    not meet it has not fixed it; a ``breaks-schema`` finding is a change
    between a release and the one before it, shown once, never fixed.
    """
    words = finding.split()
    if "sometimes" in words[:2]:  # after a releases(...) prefix, or first
        return "not judged (sometimes)"
    if "breaks-schema" in words:
        return "a change from the release before"
    last = releases.index(where[-1])
    return releases[last + 1] if last + 1 < len(releases) else "not fixed"


def _shown_path(path: Optional[str]) -> str:
    """A list's path as the table shows it: inside the checkout, relative to it; elsewhere, its file name (no machine's path in docs)."""
    if not path:
        return "none"
    relative = os.path.relpath(os.path.abspath(path), _ROOT)
    return os.path.basename(path) if relative.startswith("..") else relative


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")[:220]


def _ranges(present: Sequence[str], releases: Sequence[str]) -> str:
    """``0.5.15-0.5.18, 0.5.21`` for the releases in ``present``, runs of consecutive ones joined."""
    runs: List[List[str]] = []
    last = -2
    for release in present:
        i = releases.index(release)
        if i == last + 1:
            runs[-1].append(release)
        else:
            runs.append([release])
        last = i
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# --- the command ----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance.releases matrix", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--engine", action="append", help=f"{', '.join(sorted(ENGINES))} (repeatable; default every built-in engine that lists releases)")
    p.add_argument("--versions", help="comma-separated releases of the one engine named (default: every release it lists)")
    p.add_argument("--failure-list", help="the list each release runs with (default: the engine's newest in its failure_lists/)")
    p.add_argument("--result", help="write the one release's result here (a CI shard) instead of the table")
    p.add_argument("--out", help="the table (default docs/findings/gate-<engine>.md for one engine, docs/findings/gate-matrix.md for several)")
    p.add_argument("--cache", help="release cache (default $IPC_CONFORMANCE_RELEASES_CACHE or ~/.cache/ipc-conformance/releases)")
    p.add_argument("--fresh", action="store_true", help="run every release again, even where a result for this checkout is cached")
    p.add_argument("--workers", default="2", help="pytest-xdist workers per run (-n; default 2)")
    return p


def _default_out(engines: Sequence[str]) -> str:
    return os.path.join(_ROOT, "docs", "findings", f"gate-{engines[0]}.md" if len(engines) == 1 else "gate-matrix.md")


def _merge(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.releases matrix merge", description="the table from the shards' results")
    p.add_argument("results", nargs="+", help="result files written with --result")
    p.add_argument("--out", required=True)
    p.add_argument("--failure-list", action="append", default=[], metavar="ENGINE=LIST", help="the list an engine's shards ran with (named in the table)")
    args = p.parse_args(argv)
    verdicts = []
    for path in args.results:
        with open(path, encoding="utf-8") as fh:
            verdicts.append(ReleaseVerdict.from_dict(json.load(fh)))
    lists = dict(item.split("=", 1) for item in args.failure_list)
    text = render(verdicts, command="python -m conformance.releases matrix merge " + " ".join(os.path.basename(r) for r in args.results), failure_lists=lists)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    print(f"wrote {args.out}: {len(verdicts)} release(s)")
    return 0 if all(v.verdict != "NO VERDICT" for v in verdicts) else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Exit status 0 when every release reached a verdict (PASSED or FAILED: the table says which), 1 otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:
        return _merge(argv[1:])
    args = _parser().parse_args(argv)
    names = args.engine or [name for name in sorted(ENGINES) if find_engine(name).releases]
    if args.versions and len(names) != 1:
        raise SystemExit("--versions names the releases of one engine: give one --engine")
    verdicts: List[ReleaseVerdict] = []
    lists: Dict[str, Optional[str]] = {}
    for name in names:
        engine = find_engine(name)  # its package lives in each release's environment
        lists[name] = os.path.abspath(args.failure_list) if args.failure_list else default_failure_list(engine)
        for release in select_releases(engine, args.versions):
            verdicts.append(run_release(engine, release, failure_list=lists[name], options=["-n", args.workers], cache=args.cache, reuse=not args.fresh))
    if args.result:
        if len(verdicts) != 1:
            raise SystemExit("--result writes one release's result: name one --engine and one of its --versions")
        with open(args.result, "w", encoding="utf-8") as fh:
            json.dump(asdict(verdicts[0]), fh, indent=1, sort_keys=True)
        print(f"wrote {args.result}")
    else:
        out = args.out or _default_out(names)
        command = "python -m conformance.releases matrix " + " ".join(f"--engine {n}" for n in names) + (f" --versions {args.versions}" if args.versions else "")
        text = render(verdicts, command=command, failure_lists=lists)
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        print(f"wrote {out}: {len(verdicts)} release(s)")
    return 0 if all(v.verdict != "NO VERDICT" for v in verdicts) else 1
