"""The suite's verdict: one closing line, a JSON report, an honest exit status.

The closing line reads::

    CONFORMANCE SUITE PASSED: 812 successes, 4 skipped, 3 expected failures, 0 unexpected failures

It is PASSED only when there are no unexpected failures (failed tests,
errors, listed tests that passed or failed differently, stale list entries)
and at least one test ran.
"""

from __future__ import annotations

import json
import os
import platform
import time
from typing import Any, Dict

import pytest

__all__ = ["REPORT_ENV", "closing_line"]

REPORT_ENV = "IPC_CONFORMANCE_REPORT"


def closing_line(successes: int, skipped: int, expected: int, unexpected: int) -> str:
    verdict = "PASSED" if unexpected == 0 and successes + expected > 0 else "FAILED"
    return (
        f"CONFORMANCE SUITE {verdict}: {successes} successes, {skipped} skipped, "
        f"{expected} expected failures, {unexpected} unexpected failures"
    )


class ConformanceReport:
    def __init__(self, config):
        self.config = config
        self.results: Dict[str, Dict[str, Any]] = {}
        self.started = time.time()

    def pytest_runtest_logreport(self, report):
        entry = self.results.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
        entry["duration"] += report.duration
        if report.failed:
            entry["outcome"] = "failed"
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["message"] = (crash.message if crash is not None else str(report.longrepr))[:2000]
        elif getattr(report, "wasxfail", None) is not None and entry["outcome"] != "failed":
            entry["outcome"] = "expected failure"
            entry["reason"] = report.wasxfail
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            entry["reason"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)

    def counts(self, session) -> Dict[str, int]:
        outcomes = [r["outcome"] for r in self.results.values()]
        unexpected = outcomes.count("failed")
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
            unexpected = max(unexpected, 1)  # interrupted or internal error: never a pass
        elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and unexpected == 0:
            unexpected = 1  # failed at session level (e.g. stale failure-list entries)
        return {
            "successes": outcomes.count("passed"),
            "skipped": outcomes.count("skipped"),
            "expected_failures": outcomes.count("expected failure"),
            "unexpected_failures": unexpected,
        }

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        session = terminalreporter._session
        counts = self.counts(session)
        line = closing_line(counts["successes"], counts["skipped"], counts["expected_failures"], counts["unexpected_failures"])
        path = config.getoption("conformance_report")
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(
                    {
                        "verdict": "PASSED" if line.startswith("CONFORMANCE SUITE PASSED") else "FAILED",
                        "codec": os.environ.get("IPC_CONFORMANCE_CODEC") or os.environ.get("IPC_CONFORMANCE_TESTEE"),
                        "profile": os.environ.get("HYPOTHESIS_PROFILE"),
                        "duration_s": round(time.time() - self.started, 3),
                        "python": platform.python_version(),
                        "counts": counts,
                        "tests": self.results,
                    },
                    fh,
                    indent=1,
                    sort_keys=True,
                )
        terminalreporter.write_line(line, bold=True, green=counts["unexpected_failures"] == 0, red=counts["unexpected_failures"] > 0)

    def pytest_sessionfinish(self, session, exitstatus):
        if session.testscollected == 0 and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an empty run is not conformance


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption("--report", dest="conformance_report", default=os.environ.get(REPORT_ENV), help="write a JSON report here")


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None:  # the xdist controller or a plain run reports
        config.pluginmanager.register(ConformanceReport(config), "conformance-report")


