"""The coverage report: full coverage of the schema under ci, and gaps reported as gaps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Union

import msgspec

from reference_codec.schema import BatchTokenIDOutput, TokenizedGenerateReqInput
from strategies import coverage

ROOT = Path(__file__).resolve().parents[2]

#: Examples per message type for the full-coverage check under ci. Hypothesis
#: spends part of every budget on near-copies of earlier examples, so full
#: coverage of every nested variant needs more than the properties' budget.
#: 150 sufficed while Hypothesis drew local constants too; without them
#: (strategies.profiles.without_local_constants) it missed one variant
#: (AbortReq.finished_reason{} None) and 200 reaches all 1733.
CI_COVERAGE_EXAMPLES = 200


def test_the_coverage_command_reports_full_coverage_under_the_ci_profile():
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    env["CI"] = "true"
    result = subprocess.run(
        [sys.executable, "-m", "strategies.coverage", "--examples", str(CI_COVERAGE_EXAMPLES), "--missing-only"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, f"got exit {result.returncode}, but should be 0:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    assert summary.startswith("coverage: ") and summary.endswith(" - OK"), summary


class Probe(msgspec.Struct):
    choice: Union[int, str, List[int]]
    maybe: Optional[List[str]] = None


def test_a_variant_never_observed_is_a_gap_and_fails_the_report():
    sites = coverage.expected_sites([Probe])
    assert sites[("Probe", "choice")].labels == {"arm:int", "arm:str", "arm:list"}
    assert sites[("Probe", "maybe")].labels == {"none", "value", "empty", "full"}
    observed: set = set()
    coverage.observe(Probe(choice=3, maybe=["x"]), observed)
    coverage.observe(Probe(choice=[], maybe=None), observed)
    report = coverage.CoverageReport(sites, observed, {"Probe": 2}, ("Probe",))
    gaps = {(s.position, frozenset(m)) for s, m in report.gaps}
    assert gaps == {
        ("choice", frozenset({"arm:str"})),
        ("choice<list>", frozenset({"full"})),
        ("maybe", frozenset({"empty"})),
    }
    assert "FAIL: 3 site(s) with gaps" in report.summary(2, 0.1)
    assert "✗" in report.render(only_missing=True) and "X" in report.render(only_missing=True, ascii_only=True)


def test_pickle_wrapper_arms_are_expected_only_when_opted_in():
    plain = coverage.expected_sites([TokenizedGenerateReqInput])
    opted = coverage.expected_sites([TokenizedGenerateReqInput], pickle_wrappers=True)
    key = ("TokenizedGenerateReqInput", "time_stats")
    assert "arm:PickleWrapper" not in plain[key].labels
    assert "arm:PickleWrapper" in opted[key].labels
    assert ("BatchTokenIDOutput", "customized_info") in coverage.expected_sites([BatchTokenIDOutput])


def test_the_command_exits_1_when_anything_reachable_was_never_generated(monkeypatch, capsys):
    monkeypatch.setattr(coverage, "collect", lambda classes, examples, pickle_wrappers=False: (set(), {c.__name__: examples for c in classes}))
    assert coverage.main(["--examples", "1", "--types", "ProfileReq", "--jobs", "1", "--quiet"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_the_command_refuses_unknown_types_naming_the_option(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        coverage.main(["--types", "NoSuchMessage"])
    assert exc.value.code == 2 and "--types" in capsys.readouterr().err
