"""Strict known-failure lists (``--failure-list FILE``), in the manner of protobuf's conformance runner.

File format, one entry per line::

    # comments and blank lines are ignored
    test_roundtrip.py::test_round_trip_preserves_the_message[AbortReq]  | $.rid: type differs  # post_init turns None into ""

* the test id is the pytest node id without directories;
* after ``|``, an optional prefix of the expected failure message: the test
  must fail *with that message* to count as an expected failure;
* after ``#``, the reason (strongly encouraged: it is what reviewers read).

Strictness, so the list never goes stale:

* a failure of an unlisted test fails the run;
* a listed test that fails with a different message fails the run;
* a listed test that passes fails the run ("fixed? remove the line");
* on a full run, a listed test that does not exist any more fails the run.

Each of those failures says which line to change; ``--update-failure-list``
rewrites the file from the current results (keeping reasons of kept lines).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional

import pytest

__all__ = ["FailureEntry", "parse_failure_list", "short_id", "FAILURE_LIST_ENV"]

FAILURE_LIST_ENV = "IPC_CONFORMANCE_FAILURE_LIST"
_LINE = re.compile(r"^(?P<id>\S+)(?:\s+\|\s*(?P<prefix>[^#]*?))?\s*(?:#\s*(?P<reason>.*))?$")


@dataclass(frozen=True)
class FailureEntry:
    test_id: str
    message_prefix: Optional[str]
    reason: Optional[str]
    line: int


def short_id(nodeid: str) -> str:
    """A node id without directories: ``test_x.py::test_y[param]``."""
    path, sep, rest = nodeid.partition("::")
    return os.path.basename(path) + sep + rest


def parse_failure_list(path: str) -> Dict[str, FailureEntry]:
    """Entries by test id; ``ValueError`` naming the line for anything malformed or duplicated."""
    entries: Dict[str, FailureEntry] = {}
    with open(path, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = _LINE.match(line)
            if not m or "::" not in m.group("id"):
                raise ValueError(f"{path}:{number}: expected 'file.py::test[param] [| message prefix] [# reason]'")
            test_id = short_id(m.group("id"))
            if test_id in entries:
                raise ValueError(f"{path}:{number}: {test_id} is listed twice (first on line {entries[test_id].line})")
            prefix = (m.group("prefix") or "").strip() or None
            entries[test_id] = FailureEntry(test_id, prefix, (m.group("reason") or "").strip() or None, number)
    return entries


def _failure_message(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    # Hypothesis and pytest prefix the exception type; the list matches what follows.
    return re.sub(r"^(?:[\w.]+(?:Error|Exception)|AssertionError|Failed):\s*", "", text.strip())


class FailureListPlugin:
    def __init__(self, path: str, update: bool):
        self.path = path
        self.update = update
        self.entries = parse_failure_list(path)
        self.seen: Dict[str, str] = {}
        self.current_failures: Dict[str, str] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        test_id = short_id(item.nodeid)
        if report.when == "setup" and report.skipped:
            return
        if report.when != "call" and not report.failed:
            return
        entry = self.entries.get(test_id)
        if entry is None:
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
                f"{test_id} is listed as a known failure in {self.path}:{entry.line} but passed. "
                f"Fixed? Remove that line (or rerun with --update-failure-list)."
            )

    def pytest_runtest_logreport(self, report):
        # Runs where results are gathered (the xdist controller, or the only
        # process), unlike makereport, which runs where the test runs.
        test_id = short_id(report.nodeid)
        self.seen[test_id] = report.nodeid
        if report.failed:
            message = _failure_message(report)
            self.current_failures[test_id] = message.splitlines()[0] if message else ""
        elif getattr(report, "wasxfail", "").startswith("listed in") and test_id in self.entries:
            entry = self.entries[test_id]
            self.current_failures.setdefault(test_id, entry.message_prefix or "")

    def stale_entries(self) -> List[FailureEntry]:
        return [e for tid, e in self.entries.items() if tid not in self.seen]

    def pytest_sessionfinish(self, session, exitstatus):
        if getattr(session.config, "workerinput", None) is not None:
            return  # xdist worker: the controller decides
        selection_is_partial = bool(session.config.getoption("keyword") or session.config.getoption("markexpr"))
        stale = [] if selection_is_partial else self.stale_entries()
        if self.update:
            self._rewrite()
            return
        if stale:
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            lines = "\n".join(f"  {self.path}:{e.line}: {e.test_id}" for e in stale)
            if reporter:
                reporter.write_line(
                    f"failure list has {len(stale)} entr{'y' if len(stale) == 1 else 'ies'} for tests that no longer exist:\n{lines}\n"
                    "Remove them, or rerun with --update-failure-list.",
                    red=True,
                )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _rewrite(self) -> None:
        lines = [
            "# Known failures, maintained by `python -m conformance ... --update-failure-list`.",
            "# Format: test id | expected message prefix  # reason",
        ]
        for test_id in sorted(self.current_failures):
            old = self.entries.get(test_id)
            prefix = _printable_prefix(self.current_failures[test_id][:100].replace("#", ""))
            reason = old.reason if old and old.reason else "TODO: say why this is expected"
            lines.append(f"{test_id}  | {prefix}  # {reason}")
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def _printable_prefix(text: str) -> str:
    """``text`` up to its first unprintable character: a list line must survive editors and line splitting."""
    for i, ch in enumerate(text):
        if not ch.isprintable():
            return text[:i]
    return text


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption("--failure-list", default=os.environ.get(FAILURE_LIST_ENV), help="strict known-failure list")
    group.addoption("--update-failure-list", action="store_true", help="rewrite the failure list from this run")


def pytest_configure(config):
    path = config.getoption("failure_list")
    if path:
        config.pluginmanager.register(FailureListPlugin(path, config.getoption("update_failure_list")), "conformance-failure-list")
