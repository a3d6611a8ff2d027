"""The compatibility matrix's table: each release's row, and each finding with the release it first shows in and the one that fixed it."""

from __future__ import annotations

import json
from dataclasses import asdict

from conformance.releases.matrix import ReleaseVerdict, main, render


def _verdict(release: str, findings, verdict: str = "PASSED", absent=None, problem: str = "") -> ReleaseVerdict:
    return ReleaseVerdict(
        engine="sglang",
        release=release,
        verdict=verdict,
        counts={"successes": 10, "skipped": 1, "expected_failures": len(findings), "unexpected_failures": int(verdict == "FAILED")},
        seconds=42.0,
        findings={f: {"line": None if new else 3, "reason": "new: in no line of the list" if new else "a reason", "tests": 2} for f, new in findings},
        absent_families=absent or {},
        problem=problem,
    )


OLD_BUG = "* * raises ValueError"
NEW_BUG = "differs * : type differs: int instead of Modality"
RELEASES = [
    _verdict("0.5.15", [(OLD_BUG, False)], absent={"io-hooks": "the release has no module sglang.srt.multimodal.modality"}),
    _verdict("0.5.16", [(OLD_BUG, False)]),
    _verdict("0.5.17", [(NEW_BUG, True)], verdict="FAILED"),
    _verdict("0.5.18", [], verdict="NO VERDICT", problem="install: no wheel"),
]


def _rows(text: str, first_cell: str):
    return [line for line in text.splitlines() if line.startswith(f"| {first_cell}")]


def test_each_release_is_a_row_with_its_verdict_counts_and_absent_families_in_release_order():
    text = render(list(reversed(RELEASES)), command="python -m conformance.releases matrix --engine sglang", failure_lists={"sglang": None})
    rows = [line for line in text.splitlines() if line.startswith("| sglang 0.5.")]
    assert [row.split("|")[1].strip() for row in rows] == ["sglang 0.5.15", "sglang 0.5.16", "sglang 0.5.17", "sglang 0.5.18"]
    assert "| PASSED | 10 | 1 | 1 | 0 | 1 | 0 | io-hooks (the release has no module sglang.srt.multimodal.modality) | 42 |" in rows[0]
    assert "| FAILED |" in rows[2] and "NO VERDICT: install: no wheel" in rows[3]


def test_a_finding_names_the_release_it_first_shows_in_and_the_one_that_fixed_it():
    text = render(RELEASES, command="python -m conformance.releases matrix --engine sglang", failure_lists={"sglang": None})
    (old,) = _rows(text, "`* * raises ValueError`")
    assert old.split("|")[2:6] == [" 0.5.15 ", " 0.5.17 ", " 0.5.15-0.5.16 ", " yes "]
    (new,) = _rows(text, "`differs * : type differs: int instead of Modality`")
    # 0.5.18 reached no verdict: it neither shows the finding nor fixes it
    assert new.split("|")[2:6] == [" 0.5.17 ", " not fixed ", " 0.5.17 ", " no: new "]


def test_a_sometimes_line_is_never_called_fixed_and_a_wire_break_is_a_change_between_releases():
    sometimes = "sometimes test_encoding_is_deterministic_* * bytes-differ *"
    brk = "breaks-schema BatchStrOutput"
    verdicts = [_verdict("0.5.15", [(sometimes, False), (brk, True)]), _verdict("0.5.16", [])]
    text = render(verdicts, command="c", failure_lists={"sglang": None})
    assert _rows(text, f"`{sometimes}`")[0].split("|")[3] == " not judged (sometimes) "
    assert _rows(text, f"`{brk}`")[0].split("|")[3] == " a change from the release before "


def test_merge_writes_the_table_from_ci_shards_and_fails_when_a_release_reached_no_verdict(tmp_path):
    shards = []
    for verdict in RELEASES:
        path = tmp_path / f"{verdict.release}.json"
        path.write_text(json.dumps(asdict(verdict)))
        shards.append(str(path))
    out = tmp_path / "gate.md"
    assert main(["merge", *shards[:3], "--out", str(out), "--failure-list", "sglang=conformance/engines/sglang/failure_lists/sglang-0.5.23.txt"]) == 0
    text = out.read_text()
    assert "sglang: `conformance/engines/sglang/failure_lists/sglang-0.5.23.txt`" in text and len(_rows(text, "sglang 0.5.")) == 3
    assert main(["merge", *shards, "--out", str(out)]) == 1
