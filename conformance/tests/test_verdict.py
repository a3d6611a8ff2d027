"""The runner's verdict: bounded shrinking, one block per failure, a summary, and a closing line that is last.

Each test runs ``python -m conformance`` as a user does, on a small selection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from conformance.equivalence import differences
from conformance.failures import CodecRaised, PropertyFailure, distinct_differences, fold_numbers, summarise
from conformance.runner.shrinking import BUDGETS
from reference_codec import samples
from reference_codec import schema as s

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH_OUTPUTS = "test_roundtrip.py and (BatchTokenIDOutput or BatchStrOutput or BatchEmbeddingOutput)"


def run(codec: str, *args: str, env=None, timeout=300) -> subprocess.CompletedProcess:
    environ = dict(os.environ, **(env or {}))
    environ.pop("HYPOTHESIS_PROFILE", None)  # the runner's own default (ci) is under test
    environ.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", codec, *args],
        capture_output=True, text=True, env=environ, timeout=timeout, cwd=ROOT,
    )


# --- the parts of a failure ------------------------------------------------------------


def test_a_failure_headline_names_codec_property_reason_and_path_shape_and_its_text_every_difference():
    expected = {"rows": [[-0.5, -0.25] for _ in range(3)], "t": torch.zeros(1, requires_grad=True)}
    actual = {"rows": [[-0.5, 0.0] for _ in range(3)], "t": torch.zeros(1)}
    failure = PropertyFailure(codec="mine", what="decode(encode(m)) differs from m", differences=differences(expected, actual), message=expected)
    assert failure.headline == "[mine] decode(encode(m)) differs from m: float bits differ at $[*][*][*]"
    assert failure.signature == "decode(encode(m)) differs from m: float bits differ at $[*][*][*]"
    text = str(failure)
    assert "differences: 2 distinct (of 4 found)" in text
    assert "$['rows'][0][1]: float bits differ: got 0.0, expected -0.25  (and 2 more like it)" in text
    assert "$['t']: tensor requires_grad differs: got False, expected True" in text
    assert failure.kind == "float bits differ"


def test_numbers_are_folded_in_signatures_so_one_bug_is_one_signature():
    assert fold_numbers("length differs: 3 instead of 12 at $.x[*]") == "length differs: N instead of N at $.x[*]"
    groups = distinct_differences(differences([[1, 2], [3]], [[1], [3, 4]]))
    assert [(d.path, n) for d, n in groups] == [("$[0]", 2)]


def test_a_message_summary_is_bounded_and_leaves_out_empty_fields():
    msg = samples.batch_token_id_output(64)
    text = summarise(msg)
    assert text.startswith("BatchTokenIDOutput(") and len(text) <= 400
    assert "=None" not in summarise(samples.minimal(s.TokenizedGenerateReqInput))


def test_an_exception_from_the_codec_keeps_its_type_message_and_innermost_frames():
    def codec_internals():
        raise OverflowError("can't serialize ints < -2**63")

    try:
        codec_internals()
    except OverflowError as exc:
        failure = CodecRaised(exc, codec="mine")
    assert failure.headline == "[mine] raised OverflowError: can't serialize ints < -2**63"
    assert failure.signature == "raised OverflowError: can't serialize ints < -N**N"
    assert any("in codec_internals" in line for line in failure.details)


def test_budgets_are_bounded_under_ci_and_unbounded_under_nightly():
    assert BUDGETS["ci"].calls < float("inf") and BUDGETS["ci"].total_seconds <= 120
    assert BUDGETS["nightly"].calls == float("inf")


# --- the runner, end to end ------------------------------------------------------------


def test_each_distinct_failure_is_shrunk_once_and_the_others_point_to_it(tmp_path):
    report = tmp_path / "r.json"
    # TupleAsList fails two batch outputs at the same path (a field both carry), so the two share a signature.
    result = run("conformance.tests.broken_codecs:TupleAsList", "-p", "no:xdist", "-k", BATCH_OUTPUTS, "--report", str(report))
    assert result.returncode == 1, result.stdout[-3000:]
    tests = json.loads(report.read_text())["tests"]
    failed = {k: v for k, v in tests.items() if v["outcome"] == "failed"}
    by_signature = {}
    for nodeid, entry in failed.items():
        by_signature.setdefault(entry["signature"], []).append((nodeid, entry))
    assert any(len(group) > 1 for group in by_signature.values()), failed
    for group in by_signature.values():
        shrunk = [n for n, e in group if not e["shrink"].startswith("not shrunk")]
        assert len(shrunk) == 1, group  # exactly one test of a signature shrinks it
        for nodeid, entry in group:
            assert entry["shrunk_in"] == shrunk[0]
            if nodeid != shrunk[0]:
                assert "the same failure is shrunk in" in entry["shrink"]
    shared = next(group for group in by_signature.values() if len(group) > 1)
    assert shared[0][1]["path_shape"] in result.stdout and "reproduce: python -m conformance --codec" in result.stdout


def test_a_run_prints_capabilities_once_a_summary_and_the_closing_line_last(tmp_path):
    report = tmp_path / "r.json"
    result = run("conformance.tests.broken_codecs:ThreeBugs", "-p", "no:xdist", "-k", "test_roundtrip.py and (GetInternalStateReqOutput or DumperControlReqOutput)", "--report", str(report))
    out = result.stdout
    assert out.rstrip().splitlines()[-1].startswith("CONFORMANCE SUITE FAILED: 0 successes"), out[-2000:]
    assert out.count("it declares wire_compatible=True") == 1 and "Capabilities(" not in out
    assert "conformance summary" in out and "distinct failure(s)" in out
    data = json.loads(report.read_text())
    assert data["profile"] == "ci" and data["examples_per_test"] == 8 and data["shrink_budget"]["calls"] == BUDGETS["ci"].calls
    assert data["capabilities"]["wire_compatible"] is True
    if not torch.cuda.is_available():
        assert "device preservation (cuda:N in, cuda:N out) is untested" in out and data["not_exercised"]


def test_an_interrupted_run_counts_only_finished_tests_and_still_gives_its_verdict(tmp_path):
    report = tmp_path / "r.json"
    result = run(
        "conformance.tests.broken_codecs:TerminatedMidRun", "-p", "no:xdist", "-k", "golden and y_", "--report", str(report),
        env={"IPC_TERMINATE_AFTER": "5"},
    )
    last = result.stdout.rstrip().splitlines()[-1]
    assert last == "CONFORMANCE SUITE FAILED: 4 successes, 0 skipped, 0 expected failures, 0 unexpected failures (interrupted: only finished tests counted)", result.stdout[-2000:]
    data = json.loads(report.read_text())
    assert data["interrupted"] is True and data["counts"]["successes"] == 4 and data["counts"]["not_finished"] == 1
    assert "1 started test(s) did not finish" in result.stdout
    assert result.returncode != 0


def test_a_codec_that_cannot_be_built_ends_with_the_verdict_line_not_a_traceback():
    """``json:JSONDecodeError`` (a class that needs arguments) stands for an engine's codec whose package is missing: building it raises."""
    result = run("json:JSONDecodeError", "-k", "golden and y_abort")
    assert result.returncode == 2 and result.stdout.rstrip().splitlines()[-1].startswith("CONFORMANCE SUITE FAILED"), result.stdout + result.stderr
    assert "building the codec raised TypeError" in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_collect_only_gives_no_verdict():
    result = run("reference", "--collect-only", "-q", "-k", "golden and y_abort")
    assert result.stdout.rstrip().splitlines()[-1] == "CONFORMANCE SUITE: 1 tests collected, none run (--collect-only): no verdict"


@pytest.mark.slow
def test_the_failing_tests_and_their_headlines_are_the_same_in_two_runs(tmp_path):
    runs = []
    for i in range(2):
        report = tmp_path / f"r{i}.json"
        run("conformance.tests.broken_codecs:ThreeBugs", "-n", "2", "-k", "test_roundtrip.py or test_reencode.py", "--report", str(report), timeout=600)
        tests = json.loads(report.read_text())["tests"]
        runs.append({k: v["headline"] for k, v in tests.items() if v["outcome"] == "failed"})
    assert runs[0] and runs[0] == runs[1]


def test_variant_coverage_reports_what_the_run_drew(tmp_path):
    report = tmp_path / "r.json"
    result = run("reference", "-p", "no:xdist", "-k", "test_roundtrip.py and FlushCacheReqInput", "--variant-coverage", "--report", str(report))
    assert result.returncode == 0, result.stdout[-2000:]
    coverage = json.loads(report.read_text())["variant_coverage"]
    assert 0 < coverage["reached"] < coverage["variants"]  # one message type cannot reach the whole schema
    assert f"reached {coverage['reached']}/{coverage['variants']} variants" in result.stdout
    assert any(gap.startswith("BatchTokenIDOutput.") for gap in coverage["gaps"])
