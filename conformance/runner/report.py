"""The suite's verdict: one block per failure, a summary, a JSON report, and a closing line that is the last line.

What a run prints, in order:

* in the header, once: the implementation under test, the capabilities it
  declares, the engine and the release of it installed here, the families
  that release lacks (each with its reason: reported absent, the rest is
  tested), the Hypothesis profile, the examples per test and the shrink budget;
* for each failing test, one block (in pytest's FAILURES section): the
  headline (codec, property, first difference by path shape), the property
  and message type, whether the example was shrunk, every distinct difference
  with both values, a bounded summary of the message, and the line that
  reproduces it;
* a summary: failing tests grouped by distinct failure (where each is shrunk),
  what was skipped and why, what this machine could not exercise (no
  CUDA: device preservation untested), and what the engine says about the
  release installed here (``Engine.report``: for SGLang, the reference
  schema's distance from its classes), which never changes the verdict;
* last, after pytest's own summary, the closing line::

    CONFORMANCE SUITE PASSED: 812 successes, 4 skipped, 3 expected failures, 0 unexpected failures

It is PASSED only when there are no unexpected failures (failed tests,
errors, listed tests that passed or failed differently, stale list entries),
the run was not interrupted, and at least one test ran. Only tests that
finished are counted: an interrupted run (Ctrl-C, or SIGTERM from a CI
timeout under ``python -m conformance``) still prints its summary and writes
its report, names the tests that did not finish, and is FAILED.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from collections import Counter
from typing import Any, Dict, List, Optional

import pytest

from ..engines import EngineSelectionError, engine_from_environment, engine_spec_from_environment, family_roots, installed_version
from ..failures import NO_MESSAGE, CodecRaised, PropertyFailure, exception_signature, raised_at
from . import variant_coverage
from .seeding import DEFAULT_SEED, run_seed
from .selection import display_path, run_selector, short_id
from .shrinking import SHRINK_BUDGET, SHRINK_OUTCOME, failure_headline, failure_signature

__all__ = ["REPORT_ENV", "closing_line", "ConformanceReport"]

REPORT_ENV = "IPC_CONFORMANCE_REPORT"
_USER_KEY = "conformance"
#: Longest failure text kept in the JSON report, and distinct failures listed in the summary.
_JSON_TEXT_CHARS = 4000
_SUMMARY_FAILURES = 40
#: Which example of a kind the summary points to: the best shrunk one.
_SHRINK_RANK = {"shrunk": 0, "partly shrunk": 1, "not shrunk": 2}


def closing_line(
    successes: int, skipped: int, expected: int, unexpected: int, *, interrupted: bool = False, known_findings: Optional[int] = None
) -> str:
    """The run's last line. With a failure list, a pass says how many known findings it conforms except for."""
    verdict = "PASSED" if unexpected == 0 and successes + expected > 0 and not interrupted else "FAILED"
    line = (
        f"CONFORMANCE SUITE {verdict}: {successes} successes, {skipped} skipped, "
        f"{expected} expected failures, {unexpected} unexpected failures"
    )
    if known_findings and verdict == "PASSED":
        line += f"; conforms except for {known_findings} known finding{'s' if known_findings != 1 else ''}"
    elif known_findings:
        line += f"; {known_findings} known finding{'s' if known_findings != 1 else ''} met"
    return line + (" (interrupted: only finished tests counted)" if interrupted else "")


def _selected_codec():
    """The implementation under test, or None when none is selected or it cannot load (the suite reports that)."""
    from ..plugin import CodecSelectionError, codec_from_environment

    try:
        return codec_from_environment()
    except CodecSelectionError:
        return None


def _profile() -> str:
    import strategies

    name = strategies.profiles.current_profile() or ""
    return name[: -len("-suite")] if name.endswith("-suite") else name


def _examples() -> Optional[int]:
    from hypothesis import settings

    default = settings.default
    assert default is not None  # None only while hypothesis is still importing; it loads a profile on import
    return default.max_examples


def _reproduce_line(item) -> str:
    selector = run_selector()
    target = display_path(str(item.path)) + "::" + item.nodeid.partition("::")[2]
    profile = _profile()
    seed = run_seed(item.config)
    seed_option = f" --seed {seed}" if seed is not None and seed != DEFAULT_SEED else ""
    return f"python -m conformance {selector}{'' if profile == 'ci' else f' --profile {profile}'}{seed_option} {shlex.quote(target)}"


def failure_block(item, exc: BaseException, codec_name: str) -> Dict[str, Any]:
    """The block a maintainer reads for one failing test, and its parts for the JSON report."""
    outcome = item.stash.get(SHRINK_OUTCOME, None)
    first = outcome.first if outcome is not None else exc
    headline = failure_headline(first, codec_name)
    lines = [headline]
    where = [f"property {item.originalname if hasattr(item, 'originalname') else item.name} ({item.path.name})"]
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "tag" in params:
        where.append(f"message type {params['tag']}")
    lines.append("  " + ", ".join(where))
    if outcome is not None:
        lines.append(f"  example: {outcome.describe()}")
    if isinstance(exc, PropertyFailure):
        body = exc.render().splitlines()
        if body and body[0] != headline:
            lines.append(f"  this example: {body[0]}")
        lines += body[1:]
    else:  # raised outside the test call (a fixture)
        lines.append(f"  {failure_headline(exc, codec_name)}")
        lines += [f"  raised at {at}" for at in raised_at(exc)]
    lines.append(f"  reproduce: {_reproduce_line(item)}")
    return {
        "headline": headline,
        "kind": first.kind if isinstance(first, PropertyFailure) else exception_signature(first),
        "path_shape": first.path_shape if isinstance(first, PropertyFailure) else "",
        "signature": outcome.signature if outcome is not None else failure_signature(first),
        "shrink": outcome.describe() if outcome is not None else None,
        "shrunk_in": (outcome.shrunk_in if outcome is not None else None),
        "text": "\n".join(lines),
    }


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    """Every exception a test ends with becomes a :class:`PropertyFailure` (a :class:`CodecRaised` if need be)."""
    from hypothesis.errors import HypothesisException

    try:
        return (yield)
    except PropertyFailure:
        raise
    except HypothesisException:
        raise  # Hypothesis' own verdicts (flaky, health checks) say what they need
    except Exception as exc:
        codec = _selected_codec()
        outcome = item.stash.get(SHRINK_OUTCOME, None)
        message = outcome.message if outcome is not None and outcome.message is not None else NO_MESSAGE
        raise CodecRaised(
            exc, codec=codec.name if codec is not None else "", message=message, decode_error=codec.caps.decode_error if codec is not None else None
        ) from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    """The report of a failing property: its block, made here so that pytest formats no traceback.

    A traceback of a codec's failure can be thousands of frames (a
    ``RecursionError``), slow to format and, after deep recursion, able to
    crash pytest's own formatter; the block says what a maintainer needs.
    """
    if call.when != "call" or call.excinfo is None or not isinstance(call.excinfo.value, PropertyFailure):
        return None
    codec = _selected_codec()
    block = failure_block(item, call.excinfo.value, codec.name if codec is not None else "")
    sections = [(f"Captured {key} {when}", content) for when, key, content in getattr(item, "_report_sections", ()) if when == "call"]
    return pytest.TestReport(
        item.nodeid,
        item.location,
        {x: 1 for x in item.keywords},
        "failed",
        block["text"],
        "call",
        sections,
        call.duration,
        call.start,
        call.stop,
        [*item.user_properties, (_USER_KEY, {k: v for k, v in block.items() if k != "text"})],
    )


class ConformanceReport:
    """Gathers results where they arrive (the xdist controller, or the only process) and gives the verdict."""

    def __init__(self, config):
        self.config = config
        self.results: Dict[str, Dict[str, Any]] = {}
        self.started = time.time()
        self.interrupted = False
        self.collected = 0
        self.line: Optional[str] = None

    # --- header ---------------------------------------------------------------

    def pytest_report_header(self, config):
        codec = _selected_codec()
        budget = config.stash.get(SHRINK_BUDGET, None)
        lines = []
        engine = engine_spec_from_environment()
        if codec is not None:
            lines.append(f"conformance: testing {codec.name} ({codec.impl!r}) on engine {engine}'s messages")
            lines.append(f"conformance: it declares {_capabilities_text(codec.caps)}")
        status = engine_status()
        if status.get("package"):
            lines.append(f"conformance: engine {engine}: {status['package']} {status['release'] or 'not installed'} installed here")
        for name, why in sorted(status.get("absent_families", {}).items()):
            lines.append(f"conformance: family {name!r} is absent from this release ({why}): not tested, the rest is")
        lines.append(
            f"conformance: Hypothesis profile {_profile()!r}, {_examples()} examples per property and message type"
            + (f"; {budget.describe()}" if budget is not None else "")
        )
        return lines

    # --- per test -----------------------------------------------------------------

    def pytest_runtest_logreport(self, report):
        entry = self.results.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "finished": False})
        entry["duration"] += report.duration
        if report.when == "teardown":
            entry["finished"] = True
        for key, value in report.user_properties:
            if key == _USER_KEY:
                entry.update(value)
        if report.failed:
            entry["outcome"] = "failed"
            entry.setdefault("headline", _first_line(report))
            entry["text"] = str(report.longrepr)[:_JSON_TEXT_CHARS]
        elif getattr(report, "wasxfail", None) is not None and entry["outcome"] != "failed":
            entry["outcome"] = "expected failure"
            entry["reason"] = report.wasxfail
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            entry["reason"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)

    def pytest_collection_finish(self, session):
        self.collected = len(session.items)

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True

    # --- verdict ----------------------------------------------------------------

    def counts(self, session) -> Dict[str, int]:
        finished = [r for r in self.results.values() if r["finished"]]
        outcomes = [r["outcome"] for r in finished]
        unexpected = outcomes.count("failed")
        status = session.exitstatus
        if status == pytest.ExitCode.INTERRUPTED:
            self.interrupted = True
        if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.INTERRUPTED):
            unexpected = max(unexpected, 1)  # internal or usage error: never a pass
        elif status == pytest.ExitCode.TESTS_FAILED and unexpected == 0:
            unexpected = 1  # failed at session level (e.g. stale failure-list entries)
        return {
            "successes": outcomes.count("passed"),
            "skipped": outcomes.count("skipped"),
            "expected_failures": outcomes.count("expected failure"),
            "unexpected_failures": unexpected,
            "not_finished": len(self.results) - len(finished),
        }

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if config.option.collectonly:
            self.line = f"CONFORMANCE SUITE: {self.collected} tests collected, none run (--collect-only): no verdict"
            return
        session = terminalreporter._session
        counts = self.counts(session)
        listed = config.pluginmanager.get_plugin("conformance-failure-list")
        self.line = closing_line(
            counts["successes"],
            counts["skipped"],
            counts["expected_failures"],
            counts["unexpected_failures"],
            interrupted=self.interrupted,
            known_findings=listed.known_count() if listed is not None else None,
        )
        write = terminalreporter.write_line
        terminalreporter.section("conformance summary", sep="-")
        for line in self._summary_lines(counts):
            write(line)
        path = config.getoption("conformance_report")
        if path:
            self._write_json(path, counts)
            write(f"JSON report: {path}")

    def _summary_lines(self, counts: Dict[str, int]) -> List[str]:
        lines: List[str] = []
        failed = {nodeid: r for nodeid, r in self.results.items() if r["finished"] and r["outcome"] == "failed"}
        if failed:
            kinds: Dict[str, List[str]] = {}
            for nodeid, r in failed.items():
                kinds.setdefault(r.get("kind") or r.get("headline", ""), []).append(nodeid)
            signatures = {r.get("signature") or r.get("headline", "") for r in failed.values()}
            lines.append(f"{len(failed)} failing test(s): {len(signatures)} distinct failure(s) of {len(kinds)} kind(s)")
            ordered = sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            for kind, nodeids in ordered[:_SUMMARY_FAILURES]:
                group = [failed[n] for n in nodeids]
                lines.append(f"  {len(nodeids):4d} x {kind[:160]}")
                shapes = sorted({r["path_shape"] for r in group if r.get("path_shape")})
                properties = {n.partition("::")[2].partition("[")[0] for n in nodeids}
                if shapes:
                    shown = ", ".join(shapes[:4]) + (f" and {len(shapes) - 4} more" if len(shapes) > 4 else "")
                    lines.append(f"         {len(properties)} propert{'y' if len(properties) == 1 else 'ies'}, {len(shapes)} path(s): {shown[:200]}")
                example = min(nodeids, key=lambda n: (_SHRINK_RANK.get((failed[n].get("shrink") or "").split(" (")[0], 3), n))
                lines.append(f"         e.g. {short_id(example)}" + (f" ({failed[example]['shrink'].split(' (')[0]})" if failed[example].get("shrink") else ""))
            if len(ordered) > _SUMMARY_FAILURES:
                lines.append(f"  ... and {len(ordered) - _SUMMARY_FAILURES} more kinds (see the blocks above and the JSON report)")
        skipped = Counter(r.get("reason", "") for r in self.results.values() if r["finished"] and r["outcome"] == "skipped")
        if skipped:
            lines.append(f"{sum(skipped.values())} skipped:")
            for reason, n in skipped.most_common(8):
                lines.append(f"  {n:4d} x {_strip_skip(reason)[:160]}")
        for note in untested_here():
            lines.append(f"not exercised on this machine: {note}")
        status = engine_status()
        for name, why in sorted(status.get("absent_families", {}).items()):
            lines.append(f"absent from {status['package']} {status['release']}: family {name!r} ({why})")
        lines += engine_notes()
        if counts["not_finished"] or self.interrupted:
            unfinished = sorted(n for n, r in self.results.items() if not r["finished"])
            lines.append(f"interrupted: {counts['not_finished']} started test(s) did not finish and are not counted" + (f": {', '.join(map(short_id, unfinished[:5]))}" if unfinished else ""))
            if self.collected:
                lines.append(f"  {sum(1 for r in self.results.values() if r['finished'])} of {self.collected} collected tests finished")
        return lines

    def _write_json(self, path: str, counts: Dict[str, int]) -> None:
        codec = _selected_codec()
        budget = self.config.stash.get(SHRINK_BUDGET, None)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "verdict": "PASSED" if self.line and self.line.startswith("CONFORMANCE SUITE PASSED") else "FAILED",
                    "engine": engine_spec_from_environment(),
                    "engine_status": {**engine_status(), "notes": engine_notes()},
                    "codec": os.environ.get("IPC_CONFORMANCE_CODEC") or os.environ.get("IPC_CONFORMANCE_TESTEE"),
                    "codec_name": codec.name if codec is not None else None,
                    "capabilities": _capabilities_dict(codec.caps) if codec is not None else None,
                    "profile": _profile(),
                    "examples_per_test": _examples(),
                    "shrink_budget": budget.as_dict() if budget is not None else None,
                    "interrupted": self.interrupted,
                    "not_exercised": untested_here(),
                    "variant_coverage": variant_coverage.result_of(self.config),
                    "duration_s": round(time.time() - self.started, 3),
                    "python": platform.python_version(),
                    "counts": counts,
                    "failure_list": self._failure_list(),
                    "seed": run_seed(self.config),
                    "tests": {nodeid: {k: v for k, v in r.items()} for nodeid, r in self.results.items()},
                },
                fh,
                indent=1,
                sort_keys=True,
            )

    def _failure_list(self) -> Optional[Dict[str, Any]]:
        listed = self.config.pluginmanager.get_plugin("conformance-failure-list")
        return listed.summary() if listed is not None else None

    def pytest_sessionfinish(self, session, exitstatus):
        if session.testscollected == 0 and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not session.config.option.collectonly:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an empty run is not conformance

    def pytest_unconfigure(self, config):
        # After pytest's own "N passed in X s": the verdict is the very last line.
        if self.line is None:
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            ok = "PASSED" in self.line.split(":")[0] or "no verdict" in self.line
            reporter.write_line(self.line, bold=True, green=ok, red=not ok)
        else:
            print(self.line)
        sys.stdout.flush()


_STATUS: Dict[str, Any] = {}


def engine_status() -> Dict[str, Any]:
    """The engine under test as installed here: its package and release, and the families that release lacks (``{name: reason}``); ``{}`` when the engine does not load."""
    if "engine" not in _STATUS:
        try:
            engine = engine_from_environment()
        except EngineSelectionError:
            return {}
        absent: Dict[str, str] = {}
        if engine.families:
            try:
                absent = family_roots(engine.families, engine.package, engine.name)[1]
            except ImportError as exc:
                absent = {"(families)": f"not resolved: {exc}"}
        _STATUS["engine"] = {"name": engine.name, "package": engine.package, "release": installed_version(engine.package), "absent_families": absent}
    return dict(_STATUS["engine"])


def engine_notes() -> List[str]:
    """What the engine says about the release installed here (``Engine.report``), computed once; a failure to say it is one line."""
    if "notes" not in _STATUS:
        try:
            notes = list(engine_from_environment().report())
        except Exception as exc:  # informational: it never changes the verdict
            notes = [f"the engine's report could not be made: {type(exc).__name__}: {exc}"]
        _STATUS["notes"] = notes
    return list(_STATUS["notes"])


def untested_here() -> List[str]:
    """What this machine cannot exercise, as sentences for the summary and the report."""
    import torch

    notes = []
    if not torch.cuda.is_available():
        notes.append("CUDA tensors (no CUDA here): device preservation (cuda:N in, cuda:N out) is untested; run gpu_tests on a GPU machine")
    elif torch.cuda.device_count() < 2:
        notes.append("a second CUDA device: cuda:1 preservation is untested (one GPU here)")
    return notes


def _capabilities_text(caps) -> str:
    d = _capabilities_dict(caps)
    return ", ".join(f"{k}={v}" for k, v in d.items() if k != "name")


def _capabilities_dict(caps) -> Dict[str, Any]:
    import dataclasses

    out = {}
    for f in dataclasses.fields(caps):
        value = getattr(caps, f.name)
        if f.name == "decode_error":
            value = " | ".join(e.__qualname__ for e in value) if isinstance(value, tuple) else value.__qualname__
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def _first_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0] if text.strip() else ""


def _strip_skip(reason: str) -> str:
    return reason[len("Skipped: ") :] if reason.startswith("Skipped: ") else reason


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption("--report", dest="conformance_report", default=os.environ.get(REPORT_ENV), help="write a JSON report here")


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None:  # the xdist controller or a plain run gathers
        config.pluginmanager.register(ConformanceReport(config), "conformance-report")
