"""Known-failure lists (``--failure-list FILE``): known findings, strict where it means something.

A line names a finding (:mod:`conformance.findings`), not a test or the
wording of one example::

    # PROPERTY                  CASE                     KIND     WHERE                      [: DETAIL]  # reason [link]
    test_golden_vector          i_cuda_device_tensor.*   raises   AssertionError|RuntimeError           # torch's wording differs by build
    *                           *                        differs  *                          : type differs: Ext instead of *  # ext 64-68 unknown
    test_decodes_to_what_*      BatchStrOutput           differs  $.output_token_sampling_mask[*].lengths : ndarray dtype differs  # ...

* PROPERTY matches the property's function name, CASE the test's parameter
  (the message type; the vector file, attack or fault for the tests that
  take one; ``-`` for none), KIND one of :data:`~conformance.findings.KINDS`
  (alternatives with ``|``, or ``*``), WHERE the path shape or exception class, DETAIL (optional,
  after a lone ``:``) the finding's detail line, numbers folded to ``N``.
  In every pattern ``*`` matches any run of characters and ``|`` separates
  alternatives; everything else is literal (``$.x[*]`` as it prints).
* After ``#``, the reason (what reviewers read) and optionally a link.

What a line does:

* **A known finding never ends a test.** An example that fails with a listed
  finding is counted against that line and the test goes on drawing (for
  Hypothesis the example passed), so another failure in the same property
  and message type still fails the run, shrunk and reported as ever. A test
  that met only listed findings is an expected failure.
* **Strict.** A line that no test matched in a complete run fails the run:
  the summary says whether the bug looks fixed (its tests ran and never met
  it) or the line is stale (no test it names ran), with the command that
  rewrites the list. Partial runs (``-k``, ``-m``, test ids, ``-x``) do not
  judge lines. A line that begins with the word ``sometimes`` names a
  finding that only some draws show (it depends on the example, so another
  ``--seed`` may not meet it): it is never judged stale, and the summary says
  when a run did not meet it. Use it for such findings only; every other
  line is strict.
* ``--update-failure-list`` creates the file if need be and rewrites it: lines
  that matched are kept as written, lines that matched nothing are removed,
  and each new finding gets a line (every finding a test's examples show,
  not only its first: while updating, a new finding is noted and the test
  draws on, so the next run with the list passes) (grouped: one per kind and class, or per
  kind and reason for values that differ) whose reason says ``TODO``. It says
  what it wrote. A finding that changed (another exception class, another
  reason) no longer matches its old line, so the old reason is never kept
  for it.

Lines for some releases only
============================

An engine keeps one list in its own tree and runs it against whatever
release is installed (a development build included). The list says which
release it was recorded at, in a line of its own that
``--update-failure-list`` writes::

    recorded-at sglang 0.5.23

and a line may say which releases of the engine it holds for, before
everything else (a PEP 440 specifier set, pre- and development releases
included)::

    releases(>=0.5.19)  *  *  raises  ValueError  : too many values to unpack (expected N)  # ...
    releases(<0.5.19,!=0.5.16)  sometimes  test_x  *  bytes-differ  *  # ...

* A line whose releases exclude the installed one is not applied here: a
  finding it names fails the run as a new one.
* At the recorded release (or with no ``recorded-at`` line, or an engine
  without a release here) every applied line is strict as above.
* At another release an applied line that no test met is reported as not met
  there (fixed in that release, or not present in it) and does not fail the
  run: what fails is a finding the list does not name, a real difference of
  that release's codec.
* ``--update-failure-list`` at the recorded release rewrites the list as
  above. At another release it adds to the list without losing what holds
  elsewhere: a line not met there gets ``!=RELEASE`` added to its releases, a
  new finding's line is ``releases(==RELEASE)``, and ``recorded-at`` stays.

Narrow lines
============

``--update-failure-list`` writes the narrowest line that covers what the
examples showed: the properties, message types and path shapes met (as
``|`` alternatives, up to a few of each; ``*`` beyond). The summary warns
about a line whose CASE or WHERE is ``*`` while the run met it in only a few
message types or paths, and names the narrower pattern: such a line would
also hide the same kind of finding anywhere else.

The older form, a test id with an optional message prefix
(``test_x.py::test_y[param] | prefix  # reason``), still reads: such a line
lists one test as a whole, and a listed test that passes fails the run.

``python -m conformance`` reads the list before pytest starts, to refuse a
bad one early, so pytest finds this module imported: PYTEST_DONT_REWRITE
(it has no assert to rewrite) keeps pytest from warning about it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..engines import EngineSelectionError, engine_from_environment, installed_version
from ..findings import KINDS, Finding, Pattern, finding_of
from .selection import display_path, property_and_case, run_selector, short_id

__all__ = [
    "FailureEntry",
    "FindingLine",
    "FailureList",
    "parse_failure_list",
    "FAILURE_LIST_ENV",
    "render_lines",
]

FAILURE_LIST_ENV = "IPC_CONFORMANCE_FAILURE_LIST"
_LEGACY = re.compile(r"^(?P<id>\S+::\S+)(?:\s+\|\s*(?P<prefix>[^#]*?))?\s*(?:#\s*(?P<reason>.*))?$")
_FINDING = re.compile(r"^(?P<property>\S+)\s+(?P<case>\S+)\s+(?P<kind>\S+)\s+(?P<where>\S+)(?:\s+:\s+(?P<detail>[^#]*?))?\s*(?:#\s*(?P<reason>.*))?$")
_LINK = re.compile(r"\s*\(?(?P<link>https?://\S+?)\)?\s*$")
_TODO = "TODO: say why this is expected"
_RECORDED = re.compile(r"^recorded-at\s+(?P<package>\S+)\s+(?P<version>\S+)\s*(?:#.*)?$")
_RELEASES = re.compile(r"^releases\((?P<spec>[^()\s]*)\)$")
#: Alternatives written into one pattern by ``--update-failure-list`` before it writes ``*``.
_MAX_ALTERNATIVES = {"property": 3, "case": 4, "where": 3}


def _states_its_finding(line: "FindingLine") -> bool:
    """Whether the line's DETAIL says which bug, not only which kind of difference.

    For ``differs`` every alternative must explain itself past the difference's
    class (``type differs: list instead of tuple``, not ``ndarray shape
    differs``); for an exception, every alternative must quote its message
    (a dozen literal characters or more).
    """
    if line.detail is None:
        return False
    alternatives = [alt.replace("*", "") for alt in line.detail.text.split("|")]
    if line.kind.text == "differs":
        return all(": " in alt for alt in alternatives)
    return not line.kind.is_wildcard and all(len(alt.strip()) >= 12 for alt in alternatives)


@dataclass(frozen=True)
class FailureEntry:
    """A line of the older form: one test, as a whole."""

    test_id: str
    message_prefix: Optional[str]
    reason: Optional[str]
    line: int


@dataclass(frozen=True)
class FindingLine:
    """A line naming a known finding: which properties and cases, which kind, where, and optionally its detail."""

    property: Pattern
    case: Pattern
    kind: Pattern
    where: Pattern
    detail: Optional[Pattern]
    reason: Optional[str]
    link: Optional[str]
    line: int
    text: str
    sometimes: bool = False
    #: The line as written (reason and spacing included), which --update-failure-list keeps.
    source: str = ""
    #: The engine releases the line holds for (``releases(SPEC)``); None: every release.
    releases: Optional[SpecifierSet] = None

    def holds_at(self, release: Optional[str]) -> bool:
        """Whether the line applies where ``release`` of the engine is installed (every line does where no release is known)."""
        if self.releases is None or release is None:
            return True
        try:
            return self.releases.contains(Version(release), prereleases=True)
        except InvalidVersion:
            return True

    def matches(self, prop: str, case: str, finding: Finding) -> bool:
        return (
            self.kind.matches(finding.kind)
            and self.property.matches(prop)
            and self.case.matches(case)
            and self.where.matches(finding.where)
            and (self.detail is None or self.detail.matches(finding.detail))
        )

    def names(self, prop: str, case: str) -> bool:
        """Whether this line is about the test ``prop[case]`` at all (any finding)."""
        return self.property.matches(prop) and self.case.matches(case)

    def describe(self) -> str:
        return self.text + (f"  # {self.reason}" if self.reason else "")


@dataclass
class FailureList:
    """A parsed list: its finding lines and its older-form entries by test id."""

    path: str
    findings: List[FindingLine] = field(default_factory=list)
    by_test: Dict[str, FailureEntry] = field(default_factory=dict)
    #: ``(package, version)`` of the ``recorded-at`` line, or None.
    recorded: Optional[Tuple[str, str]] = None

    def match(self, prop: str, case: str, finding: Finding) -> Optional[FindingLine]:
        """The first line that names this finding of ``prop[case]``, or None."""
        for line in self.findings:
            if line.matches(prop, case, finding):
                return line
        return None


def parse_failure_list(path: str) -> FailureList:
    """The list at ``path``; ``ValueError`` naming the file and line for anything malformed or duplicated."""
    parsed = FailureList(path)
    seen: Dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            recorded = _RECORDED.match(line)
            if recorded:
                if parsed.recorded is not None:
                    raise ValueError(f"{path}:{number}: a second recorded-at line")
                parsed.recorded = (recorded.group("package"), recorded.group("version"))
                continue
            if line.startswith("recorded-at"):
                raise ValueError(f"{path}:{number}: expected 'recorded-at PACKAGE VERSION'")
            first = line.split(None, 1)[0]
            if "::" in first:
                m = _LEGACY.match(line)
                if not m:
                    raise ValueError(f"{path}:{number}: expected 'file.py::test[param] [| message prefix] [# reason]'")
                test_id = short_id(m.group("id"))
                if test_id in parsed.by_test:
                    raise ValueError(f"{path}:{number}: {test_id} is listed twice (first on line {parsed.by_test[test_id].line})")
                prefix = (m.group("prefix") or "").strip() or None
                parsed.by_test[test_id] = FailureEntry(test_id, prefix, (m.group("reason") or "").strip() or None, number)
                continue
            parsed.findings.append(_finding_line(path, number, line))
            key = parsed.findings[-1].text
            if key in seen:
                raise ValueError(f"{path}:{number}: the same finding is listed twice (first on line {seen[key]})")
            seen[key] = number
    return parsed


def _finding_line(path: str, number: int, source: str) -> FindingLine:
    line = source
    releases: Optional[SpecifierSet] = None
    releases_text = ""
    sometimes = False
    while True:  # the prefixes, in any order: releases(SPEC), sometimes
        parts = line.split(None, 1)
        head = parts[0] if parts else ""
        if head.startswith("releases") and releases is None:
            spec = _RELEASES.match(head)
            releases_text = spec.group("spec") if spec else ""
            try:
                releases = SpecifierSet(releases_text)
            except InvalidSpecifier:
                spec = None
            if spec is None or not releases_text:
                raise ValueError(f"{path}:{number}: {head!r}: expected releases(SPEC), SPEC a PEP 440 specifier set such as releases(>=0.5.19,<0.5.23)")
        elif head == "sometimes" and not sometimes:
            sometimes = True
        else:
            break
        line = parts[1] if len(parts) > 1 else ""
    m = _FINDING.match(line)
    if not m:
        raise ValueError(f"{path}:{number}: expected 'PROPERTY CASE KIND WHERE [: DETAIL]  # reason' (see conformance/runner/failure_list.py)")
    kind = m.group("kind")
    for alternative in kind.split("|"):
        if alternative != "*" and alternative not in KINDS:
            raise ValueError(f"{path}:{number}: unknown finding kind {alternative!r}: use one of {', '.join(KINDS)} or *")
    reason = (m.group("reason") or "").strip() or None
    link = None
    if reason:
        found = _LINK.search(reason)
        if found:
            link = found.group("link")
    detail = (m.group("detail") or "").strip()
    text = line.split("#", 1)[0].strip()
    try:
        return FindingLine(
            Pattern(m.group("property")),
            Pattern(m.group("case")),
            Pattern(kind),
            Pattern(m.group("where")),
            Pattern(detail) if detail else None,
            reason,
            link,
            number,
            (f"releases({releases_text}) " if releases is not None else "") + ("sometimes " if sometimes else "") + " ".join(text.split()),
            sometimes,
            source,
            releases,
        )
    except ValueError as exc:
        raise ValueError(f"{path}:{number}: {exc}") from None


def _failure_message(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    # Hypothesis and pytest prefix the exception type; the list matches what follows.
    return re.sub(r"^(?:[\w.]+(?:Error|Exception)|AssertionError|Failed):\s*", "", text.strip())


def _decode_error(item) -> Any:
    """The declared decode error of the codec a test uses (its ``codec`` fixture), or None."""
    codec = getattr(item, "funcargs", {}).get("codec")
    return getattr(getattr(codec, "caps", None), "decode_error", None)


_HITS = pytest.StashKey[Dict[int, int]]()
#: Per line matched in a test: the WHERE values of the findings it matched.
_MET = pytest.StashKey[Dict[int, Set[str]]]()
#: Under --update-failure-list: findings no line names, met by a test's examples (each once).
_FOUND = pytest.StashKey[List[Finding]]()
_USER_KEY = "conformance-findings"


@dataclass
class _NewFinding:
    """A finding no line names, as the update groups it."""

    finding: Finding
    tests: List[str] = field(default_factory=list)
    #: The WHERE of each finding grouped here (path shapes, for values that differ).
    wheres: Set[str] = field(default_factory=set)

    def add(self, nodeid: str, finding: Finding) -> None:
        self.tests.append(nodeid)
        self.wheres.add(finding.where)


def _installed_release() -> Tuple[Optional[str], Optional[str]]:
    """``(package, release)`` of the engine under test as installed here; ``(None, None)`` for an engine without a package or one not loadable."""
    try:
        engine = engine_from_environment()
    except EngineSelectionError:
        return None, None
    return engine.package, installed_version(engine.package)


class FailureListPlugin:
    def __init__(self, path: str, update: bool, release: Optional[Tuple[Optional[str], Optional[str]]] = None):
        self.path = path
        self.update = update
        self.list = parse_failure_list(path) if os.path.exists(path) else FailureList(path)
        self.package, self.release = release if release is not None else _installed_release()
        self.all_lines = list(self.list.findings)
        #: Lines whose releases exclude the installed one: kept in the file, not applied here.
        self.elsewhere = [line for line in self.list.findings if not line.holds_at(self.release)]
        self.list.findings = [line for line in self.list.findings if line.holds_at(self.release)]
        recorded = self.list.recorded
        #: Whether unmet lines are judged here: at the release the list was recorded at, or with no release on either side.
        self.judged_here = recorded is None or self.release is None or recorded[1] == self.release
        self.entries = self.list.by_test
        # Gathered where results arrive (the xdist controller, or the only process).
        self.seen: Dict[str, str] = {}
        self.current_failures: Dict[str, str] = {}
        self.line_tests: Dict[int, Set[str]] = defaultdict(set)
        self.line_examples: Counter = Counter()
        #: Per line, the (property, case, where) its examples showed: how far its patterns had to reach.
        self.line_met: Dict[int, Set[Tuple[str, str, str]]] = defaultdict(set)
        self.ran: Set[Tuple[str, str]] = set()
        self.new: Dict[str, _NewFinding] = {}
        #: Findings of tests listed by older-form lines: what --update-failure-list converts them to.
        self.converted: Dict[str, _NewFinding] = {}
        self.legacy_listed: Set[str] = set()
        self.partial = False
        self.legacy_partial = False
        self.wrote: Optional[str] = None

    # --- where tests run: a known finding never ends a test -----------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        if handle is None or not (self.list.findings or self.update):
            return (yield)
        inner = handle.inner_test
        hits = item.stash.setdefault(_HITS, {})
        met = item.stash.setdefault(_MET, {})
        found = item.stash.setdefault(_FOUND, [])
        update = self.update
        prop, case = property_and_case(item.nodeid)
        decode_error = _decode_error(item)
        listed = self.list

        def call(*args, **kwargs):
            from hypothesis.errors import HypothesisException

            try:
                return inner(*args, **kwargs)
            except HypothesisException:
                raise
            except Exception as exc:
                finding = finding_of(exc, decode_error)
                line = listed.match(prop, case, finding)
                if line is not None:
                    hits[line.line] = hits.get(line.line, 0) + 1
                    met.setdefault(line.line, set()).add(finding.where)
                    return None  # counted against its line; Hypothesis draws on
                if not update:
                    raise
                # Updating the list: note the new finding and draw on, so that every finding
                # the test's examples show gets a line, not only the first (else the next run fails).
                if finding not in found:
                    found.append(finding)
                return None

        handle.inner_test = call
        try:
            return (yield)
        finally:
            handle.inner_test = inner

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.when == "setup" and report.skipped:
            return report
        if report.when != "call" and not report.failed:
            return report
        prop, case = property_and_case(item.nodeid)
        hits = item.stash.get(_HITS, {})
        met = item.stash.setdefault(_MET, {})
        found = list(item.stash.get(_FOUND, []))
        finding: Optional[Finding] = None
        if report.when == "call" and report.failed and call.excinfo is not None:
            finding = finding_of(call.excinfo.value, _decode_error(item))
            line = self.list.match(prop, case, finding)
            if line is not None:  # a test that is not a Hypothesis test fails once, with a listed finding
                hits[line.line] = hits.get(line.line, 0) + 1
                met.setdefault(line.line, set()).add(finding.where)
                finding = None
                report.outcome = "skipped"
            elif self.update:  # a test that is not a Hypothesis test: its one finding goes into the list too
                found.append(finding)
                finding = None
                report.outcome = "skipped"
        if found and report.when == "call" and not report.failed:
            report.outcome = "skipped"
            report.wasxfail = f"new finding{'s' if len(found) > 1 else ''}, added to {os.path.basename(self.path)}: " + "; ".join(map(str, found))
        elif hits and report.when == "call" and not report.failed:
            report.outcome = "skipped"
            report.wasxfail = "known finding" + ("s" if len(hits) > 1 else "") + ": " + "; ".join(
                f"{os.path.basename(self.path)}:{n} ({self._line(n).reason or 'no reason given'})" for n in sorted(hits)
            )
        report.user_properties.append(
            (
                _USER_KEY,
                {
                    "hits": dict(hits),
                    "met": {str(n): sorted(wheres) for n, wheres in met.items()},
                    "finding": None if finding is None else [finding.kind, finding.where, finding.detail],
                    "added": [[f.kind, f.where, f.detail] for f in found],
                },
            )
        )
        self._legacy(item, report)
        return report

    def _line(self, number: int) -> FindingLine:
        return next(line for line in self.list.findings if line.line == number)

    def _legacy(self, item, report) -> None:
        """The older form: one listed test as a whole, with an optional message prefix."""
        entry = self.entries.get(short_id(item.nodeid))
        wasxfail = getattr(report, "wasxfail", "")  # pytest sets it (to the reason) on an xfail
        if entry is None or wasxfail:
            return
        if report.failed:
            message = _failure_message(report)
            if entry.message_prefix and not message.startswith(entry.message_prefix):
                report.sections.append(
                    (
                        "failure list",
                        f"{self.path}:{entry.line} expects a failure starting with {entry.message_prefix!r}; "
                        f"this one starts with {message[:120]!r}. Update that line if the new failure is expected.",
                    )
                )
                return
            report.outcome = "skipped"
            report.wasxfail = f"listed in {os.path.basename(self.path)}:{entry.line}" + (f" ({entry.reason})" if entry.reason else "")
        elif report.when == "call" and report.passed and not self.update:
            report.outcome = "failed"
            report.longrepr = (
                f"{short_id(item.nodeid)} is listed as a known failure in {self.path}:{entry.line} but passed. "
                f"Fixed? Remove that line (or rerun with --update-failure-list)."
            )

    # --- where results arrive ------------------------------------------------------

    def pytest_runtest_logreport(self, report):
        test_id = short_id(report.nodeid)
        self.seen[test_id] = report.nodeid
        prop, case = property_and_case(report.nodeid)
        if report.when == "call":
            self.ran.add((prop, case))
        for key, value in report.user_properties:
            if key != _USER_KEY:
                continue
            for number, examples in value["hits"].items():
                self.line_tests[int(number)].add(report.nodeid)
                self.line_examples[int(number)] += examples
            for number, wheres in value.get("met", {}).items():
                self.line_met[int(number)].update((prop, case, where) for where in wheres)
            if value["finding"] is not None:
                finding = Finding(*value["finding"])
                target = self.new if report.failed else self.converted
                target.setdefault(_group_key(finding), _NewFinding(finding)).add(report.nodeid, finding)
            for parts in value.get("added", ()):
                finding = Finding(*parts)
                self.new.setdefault(_group_key(finding), _NewFinding(finding)).add(report.nodeid, finding)
        if getattr(report, "wasxfail", "").startswith("listed in"):
            self.legacy_listed.add(test_id)
        if report.failed:
            message = _failure_message(report)
            self.current_failures[test_id] = message.splitlines()[0] if message else ""
        elif getattr(report, "wasxfail", "").startswith("listed in") and test_id in self.entries:
            self.current_failures.setdefault(test_id, self.entries[test_id].message_prefix or "")

    def pytest_sessionfinish(self, session, exitstatus):
        if getattr(session.config, "workerinput", None) is not None:
            return  # xdist worker: the controller decides
        self.partial = _partial(session)
        # Older-form entries name one test each: as before, only -k and -m keep them from being judged.
        self.legacy_partial = bool(session.config.getoption("keyword") or session.config.getoption("markexpr"))
        if self.update:
            self._rewrite()
            return
        if (not self.partial and self.judged_here and self.unmatched_lines()) or (not self.legacy_partial and self.stale_entries()):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def unmatched_lines(self) -> List[FindingLine]:
        """Lines applied here that no test met in this run (``sometimes`` lines aside: they are not judged)."""
        return [line for line in self.list.findings if not self.line_tests.get(line.line) and not line.sometimes]

    def broad_lines(self) -> List[Dict[str, Any]]:
        """Lines whose CASE or WHERE is ``*`` while this run met them in only a few values: what each could be narrowed to.

        A line whose DETAIL states its finding (:func:`_states_its_finding`) is
        not one: it names one bug wherever it shows, which is what a wide CASE
        and WHERE are for.
        """
        out = []
        for line in self.list.findings:
            met = self.line_met.get(line.line)
            if not met or _states_its_finding(line):
                continue
            narrower = {}
            for part, index in (("case", 1), ("where", 2)):
                values = sorted({m[index] or "-" for m in met})
                if getattr(line, part).is_wildcard and len(values) <= _MAX_ALTERNATIVES[part]:
                    narrower[part] = _alternatives(values, _MAX_ALTERNATIVES[part])
            if narrower:
                out.append({"line": line.line, "finding": line.text, "narrower": narrower})
        return out

    def stale_entries(self) -> List[FailureEntry]:
        return [e for tid, e in self.entries.items() if tid not in self.seen]

    def known_count(self) -> int:
        """Findings known to the list that this run met: lines matched, and older-form entries that failed as listed."""
        known = sum(1 for line in self.list.findings if self.line_tests.get(line.line)) + len(self.legacy_listed)
        return known + (len(self.new) if self.update else 0)  # updating: what it adds is known from now on

    # --- the summary and the report ---------------------------------------------------

    def summary(self) -> Dict[str, Any]:
        """What the list did in this run, for the terminal summary and the JSON report."""
        known, fixed, stale, unmet, not_here = [], [], [], [], []
        for line in self.list.findings:
            tests = self.line_tests.get(line.line, set())
            entry = {"line": line.line, "finding": line.text, "reason": line.reason, "link": line.link}
            if not tests and line.sometimes:
                unmet.append(entry)
            elif tests:
                known.append(
                    {**entry, "tests": len(tests), "examples": self.line_examples[line.line], "e.g.": short_id(min(tests)), "test_ids": sorted(map(short_id, tests))}
                )
            elif not self.judged_here:
                not_here.append(entry)
            elif any(line.names(p, c) for p, c in self.ran):
                fixed.append(entry)
            else:
                stale.append(entry)
        new = [
            {"finding": key, "tests": len(n.tests), "e.g.": short_id(min(n.tests))}
            for key, n in sorted(self.new.items(), key=lambda kv: (-len(kv[1].tests), kv[0]))
        ]
        return {
            "path": self.path,
            "known": known,
            "new": new,
            "fixed": [] if self.partial else fixed,
            "stale": ([] if self.partial else stale)
            + [{"line": e.line, "finding": e.test_id, "reason": e.reason, "no_longer_exists": True} for e in ([] if self.legacy_partial else self.stale_entries())],
            "sometimes_not_met": unmet,
            "not_met_at_this_release": [] if self.partial else not_here,
            "not_for_this_release": [{"line": line.line, "finding": line.text} for line in self.elsewhere],
            "recorded_at": list(self.list.recorded) if self.list.recorded else None,
            "release": [self.package, self.release] if self.package else None,
            "broad": self.broad_lines(),
            "partial_run": self.partial,
            "written": self.wrote,
        }

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if config.option.collectonly:
            return
        data = self.summary()
        write = terminalreporter.write_line
        terminalreporter.section("known findings", sep="-")
        name = os.path.basename(self.path)
        write(f"{len(data['known'])} known finding(s) of {name} met in this run")
        for k in data["known"]:
            write(f"  {name}:{k['line']}: {k['finding']}  ({k['tests']} tests, {k['examples']} examples; e.g. {k['e.g.']})")
        if data["new"] and self.update:
            write(f"{len(data['new'])} new finding(s), each added to {name} as a line marked TODO:", bold=True)
            for n in data["new"]:
                write(f"  {n['finding']}  ({n['tests']} tests; e.g. {n['e.g.']})")
        elif data["new"]:
            write(f"{len(data['new'])} new finding(s), in no line of {name} (they fail the run):", red=True)
            for n in data["new"]:
                write(f"  {n['finding']}  ({n['tests']} tests; e.g. {n['e.g.']})", red=True)
        if data["fixed"]:
            write(f"{len(data['fixed'])} line(s) whose tests ran but never met their finding: fixed? (they fail the run)", red=True)
            for f in data["fixed"]:
                write(f"  {name}:{f['line']}: {f['finding']}  # {f['reason'] or ''}", red=True)
        if data["stale"]:
            write(f"{len(data['stale'])} stale line(s): no test they name ran; tests that no longer exist? (they fail the run)", red=True)
            for f in data["stale"]:
                write(f"  {name}:{f['line']}: {f['finding']}  # {f['reason'] or ''}", red=True)
        if data["not_met_at_this_release"]:
            recorded = " ".join(data["recorded_at"] or ())
            write(
                f"{len(data['not_met_at_this_release'])} line(s) not met at {self.package} {self.release} (fixed in it, or not present in it); "
                f"not judged here: {name} was recorded at {recorded}"
            )
            for f in data["not_met_at_this_release"]:
                write(f"  {name}:{f['line']}: {f['finding']}")
        if data["not_for_this_release"]:
            write(f"{len(data['not_for_this_release'])} line(s) hold for other releases than {self.package} {self.release}: not applied")
        if data["broad"]:
            write(f"{len(data['broad'])} line(s) reach much further than what met them: they would hide the same kind of finding elsewhere", yellow=True)
            for b in data["broad"]:
                narrower = ", ".join(f"{part} {pattern}" for part, pattern in b["narrower"].items())
                write(f"  {name}:{b['line']}: {b['finding']}  -> met only at {narrower}", yellow=True)
        if data["sometimes_not_met"]:
            write(f"{len(data['sometimes_not_met'])} line(s) marked 'sometimes' not met in this run (not judged):")
            for f in data["sometimes_not_met"]:
                write(f"  {name}:{f['line']}: {f['finding']}")
        if (data["fixed"] or data["stale"]) and not self.update:
            write(f"To rewrite the list from this run: {_update_command(self.path)}", red=True)
        if data["partial_run"] and not self.update:
            write("(a partial run: lines that matched nothing are not judged)")
        if self.wrote:
            write(self.wrote, bold=True)

    # --- --update-failure-list -----------------------------------------------------------

    def _rewrite(self) -> None:
        legacy_reason = {e.test_id: e.reason for e in self.entries.values()}
        # Updating at a release other than the recorded one adds to the list without losing what holds elsewhere.
        foreign = not self.judged_here and self.release is not None
        applied = {id(line) for line in self.list.findings}
        out: List[str] = []
        removed = narrowed = 0
        for line in self.all_lines:
            if id(line) not in applied or self.line_tests.get(line.line) or self.partial or line.sometimes:
                out.append(line.source)
            elif foreign:
                out.append(_with_releases(line, f"!={self.release}"))
                narrowed += 1
            else:
                removed += 1
        groups = {key: _NewFinding(n.finding, list(n.tests), set(n.wheres)) for key, n in self.converted.items()}
        for key, n in self.new.items():
            group = groups.setdefault(key, _NewFinding(n.finding))
            group.tests.extend(n.tests)
            group.wheres.update(n.wheres)
        added = sorted(_new_line(n, legacy_reason) for n in groups.values())
        if foreign:
            added = [f"releases(=={self.release})  {line}" for line in added]
        recorded = self.list.recorded if foreign else ((self.package, self.release) if self.package and self.release else self.list.recorded)
        lines = [
            "# Known findings, maintained with `python -m conformance ... --failure-list THIS --update-failure-list`.",
            "# [releases(SPEC)] [sometimes] PROPERTY  CASE  KIND  WHERE  [: DETAIL]  # reason  (format: conformance/runner/failure_list.py)",
        ]
        if recorded:
            lines.append(f"recorded-at {recorded[0]} {recorded[1]}")
        lines += out
        lines += added
        os.makedirs(os.path.dirname(os.path.abspath(self.path)) or ".", exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        converted = len(self.entries)
        todo = sum(1 for line in added if line.endswith(_TODO))
        self.wrote = (
            f"failure list {self.path}: wrote {len(out) + len(added)} line(s): {len(added)} added"
            + (f" (for {self.package} {self.release} only)" if foreign and added else "")
            + (f" ({todo} marked TODO: give each a reason)" if todo else "")
            + f", {removed} removed, {len(out)} kept"
            + (f" ({narrowed} of them not met at {self.package} {self.release}: now excluding it)" if narrowed else "")
            + (f"; {converted} test-id line(s) of the older form replaced" if converted else "")
            + ("; a partial run: no line was removed" if self.partial else "")
        )


def _with_releases(line: FindingLine, clause: str) -> str:
    """``line`` as written, with ``clause`` (``!=0.5.22``) added to its releases (or as its releases)."""
    parts = line.source.split()
    head = next((p for p in parts if _RELEASES.match(p)), None)
    if head is None:
        return f"releases({clause})  {line.source}"
    return line.source.replace(head, f"{head[:-1]},{clause})", 1)


def _group_key(finding: Finding) -> str:
    """New findings are grouped by kind and class, or, for values that differ, by kind and reason."""
    if finding.kind == "differs":
        return f"differs * : {finding.detail}"
    return f"{finding.kind} {finding.where or '*'}"


def _alternatives(values: Sequence[str], limit: int) -> str:
    distinct = sorted(set(values))
    if len(distinct) > limit:
        return "*"
    return "|".join(_literal(v) for v in distinct)


def _literal(text: str) -> str:
    """``text`` as a pattern matching it: ``|`` and ``*`` in it, which a pattern would read, become ``*``; never empty."""
    text = "".join(text.split()).replace("|", "*").replace("#", "*")
    return text or "-"


def _new_line(new: _NewFinding, legacy_reason: Dict[str, Optional[str]]) -> str:
    cases = [property_and_case(t) for t in new.tests]
    prop = _alternatives([p for p, _ in cases], _MAX_ALTERNATIVES["property"])
    case = _alternatives([c for _, c in cases], _MAX_ALTERNATIVES["case"])
    finding = new.finding
    if finding.kind == "differs":
        # The path shapes the examples showed: the narrowest WHERE that covers them (``*`` past a few).
        where = _alternatives(sorted(new.wheres), _MAX_ALTERNATIVES["where"]) if new.wheres and "" not in new.wheres else "*"
        detail = " : " + finding.detail.replace("|", "*").replace("#", "") if finding.detail else ""
    else:
        where, detail = _literal(finding.where) if finding.where else "*", ""
    reasons = {legacy_reason.get(short_id(t)) for t in new.tests}
    reason = reasons.pop() if len(reasons) == 1 and None not in reasons else _TODO
    return f"{prop}  {case}  {finding.kind}  {where}{detail}  # {reason}"


def render_lines(findings: Sequence[Tuple[str, str, Finding]]) -> List[str]:
    """The lines ``--update-failure-list`` would add for ``(property, case, finding)`` triples (for tools and tests)."""
    groups: Dict[str, _NewFinding] = {}
    for prop, case, finding in findings:
        groups.setdefault(_group_key(finding), _NewFinding(finding)).add(f"x.py::{prop}" + ("" if case == "-" else f"[{case}]"), finding)
    return sorted(_new_line(n, {}) for n in groups.values())


def _partial(session) -> bool:
    """Whether this run selected part of the suite (``-k``, ``-m``, test ids or files) or stopped early."""
    config = session.config
    if config.getoption("keyword") or config.getoption("markexpr"):
        return True
    if session.shouldstop or session.shouldfail or getattr(config.option, "maxfail", 0):
        return True
    return any("::" in str(arg) or os.path.isfile(str(arg).split("::")[0]) for arg in config.args)


def _update_command(path: str) -> str:
    return f"python -m conformance {run_selector()} --failure-list {shlex.quote(display_path(path))} --update-failure-list -n 2"


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption("--failure-list", default=os.environ.get(FAILURE_LIST_ENV), help="known-failure list (see conformance/runner/failure_list.py)")
    group.addoption("--update-failure-list", action="store_true", help="create or rewrite the failure list from this run")


def pytest_configure(config):
    path = config.getoption("failure_list")
    if not path:
        return
    update = config.getoption("update_failure_list")
    if not update and not os.path.exists(path):
        raise pytest.UsageError(f"failure list {path} does not exist: create it with --update-failure-list")
    try:
        plugin = FailureListPlugin(path, update)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(plugin, "conformance-failure-list")
