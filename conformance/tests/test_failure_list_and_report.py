"""Failure lists are strict both ways, and the closing line and JSON report tell the truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conformance.runner.failure_list import parse_failure_list
from conformance.runner.report import closing_line
from conformance.runner.selection import short_id

FAILING = "test_golden_vectors.py::test_golden_vector[y_abort_req.json]"  # BoolAsInt breaks abort_all
PASSING = "test_golden_vectors.py::test_golden_vector[y_flush_cache_req_input.json]"


def run(codec, selection, *extra):
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci")
    return subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", codec, "-q", "-p", "no:xdist", "-k", selection, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def last_line(result) -> str:
    return [line for line in result.stdout.splitlines() if line.startswith("CONFORMANCE SUITE")][-1]


def test_parse_reads_ids_prefixes_and_reasons_and_rejects_duplicates(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text(f"# header\n\nsuite/{FAILING} | $.abort_all  # BoolAsInt\n{PASSING}\n")
    entries = parse_failure_list(str(path)).by_test
    assert entries[FAILING].message_prefix == "$.abort_all" and entries[FAILING].reason == "BoolAsInt"
    assert entries[PASSING].message_prefix is None and entries[PASSING].line == 4
    path.write_text(f"{FAILING}\n{FAILING}\n")
    with pytest.raises(ValueError, match="listed twice"):
        parse_failure_list(str(path))


def test_short_id_drops_directories():
    assert short_id("conformance/suite/test_x.py::test_y[a/b]") == "test_x.py::test_y[a/b]"


def test_closing_line_passes_only_without_unexpected_failures_and_with_something_run():
    assert closing_line(3, 1, 2, 0).startswith("CONFORMANCE SUITE PASSED: 3 successes, 1 skipped, 2 expected failures")
    assert closing_line(3, 0, 0, 1).startswith("CONFORMANCE SUITE FAILED")
    assert closing_line(0, 5, 0, 0).startswith("CONFORMANCE SUITE FAILED")


@pytest.mark.parametrize(
    "listing, selection, verdict, evidence",
    [
        ("", "y_abort_req", "FAILED", "1 unexpected failures"),
        (f"{FAILING}  # bool decoded as int", "y_abort_req", "PASSED", "1 expected failures"),
        (f"{FAILING} | something else entirely", "y_abort_req", "FAILED", "expects a failure starting with"),
        (f"{PASSING}  # stale: it passes", "y_flush_cache_req_input", "FAILED", "but passed"),
        (f"{FAILING}\ntest_golden_vectors.py::test_golden_vector[y_gone.json]", "golden", "FAILED", "no longer exist"),
    ],
    ids=["unlisted-failure", "listed-failure", "listed-with-other-message", "listed-but-passes", "stale-entry"],
)
def test_failure_list_is_strict(tmp_path, listing, selection, verdict, evidence):
    path = tmp_path / "known.txt"
    path.write_text(listing + "\n")
    selection_arg = selection if selection == "golden" else f"golden and {selection}"
    extra = ["--failure-list", str(path), "--report", str(tmp_path / "r.json")]
    if selection == "golden":
        extra = ["--failure-list", str(path)]
        result = subprocess.run(
            [sys.executable, "-m", "conformance", "--codec", "conformance.tests.broken_codecs:BoolAsInt", "-q", "-p", "no:xdist", "conformance/suite/test_golden_vectors.py", *extra],
            capture_output=True, text=True, env=dict(os.environ, HYPOTHESIS_PROFILE="ci"), timeout=300,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        )
    else:
        result = run("conformance.tests.broken_codecs:BoolAsInt", selection_arg, *extra)
    assert last_line(result).startswith(f"CONFORMANCE SUITE {verdict}"), result.stdout[-2000:]
    assert evidence in result.stdout, result.stdout[-2000:]
    assert (result.returncode == 0) == (verdict == "PASSED")
    if (tmp_path / "r.json").exists():
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["verdict"] == verdict and report["codec"].endswith("BoolAsInt")
