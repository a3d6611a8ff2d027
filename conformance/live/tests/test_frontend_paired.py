"""The live benchmark's rounds in the paired design (conformance.paired): balanced orders, and each ratio's interval in the summary and the report."""

from __future__ import annotations

from collections import Counter

from conformance.live.frontend import bench, bench_summary
from conformance.live.tests.test_frontend import _ToolOnlyFrontend


class _ThreeModes(_ToolOnlyFrontend):
    """A front end of three modes whose benchmark tool writes fixed figures."""

    modes = ("a", "b", "c")
    description = "three modes whose tool writes fixed figures"


def test_bench_runs_the_modes_in_a_balanced_order_and_gives_each_ratio_an_interval(tmp_path):
    frontend = _ThreeModes()
    runs = bench(frontend, frontend.modes, concurrencies=[1], repeats=6, prompts={1: 2}, input_len=8, output_len=4, seed=0, workdir=str(tmp_path), log=lambda line: None)
    order = [r.mode for r in runs]
    rounds = [order[i:i + 3] for i in range(0, 18, 3)]
    follows = Counter((x, y) for row in rounds for x, y in zip(row, row[1:]))
    assert len(follows) == 6 and set(follows.values()) == {2}, follows  # a rotation alone puts b after a 3 times and a after b never
    assert Counter(row[0] for row in rounds) == {"a": 2, "b": 2, "c": 2}
    rows = bench_summary(runs, list(frontend.modes))
    assert all(row["request_throughput_ratio_interval"] == [1.0, 1.0] for row in rows)


def test_the_report_gives_each_modes_req_s_ratio_interval_and_names_the_design(tmp_path):
    import argparse

    from conformance.live.frontend import BenchRun
    from conformance.live.frontend_main import _write_doc

    per_round = [1.0, 1.1, 0.9, 1.2, 0.95, 1.05, 1.0]  # b over a, 7 rounds: 95% interval = 1st and 7th of the sorted ratios
    runs = [
        BenchRun(mode, 1, rep, {"request_throughput": 10.0 * (ratio if mode == "b" else 1.0), "output_throughput": 1.0, "mean_ttft_ms": 1.0, "mean_itl_ms": 1.0, "server_cpu_ms": None})
        for rep, ratio in enumerate(per_round)
        for mode in ("a", "b")
    ]
    args = argparse.Namespace(input_len=8, output_len=4, prompts="1:2", repeats=7)
    doc = tmp_path / "report.md"
    _write_doc(str(doc), ["--frontend", "x"], bench_summary(runs, ["a", "b"]), runs, args, "abc1234", "a front end", ["a verdict"])
    text = doc.read_text()
    assert "Williams design" in text and "- a verdict" in text
    (b_row,) = [line for line in text.splitlines() if line.startswith("| 1 | b |")]
    assert "| 0.900-1.200 | 1.000, 1.100, 0.900, 1.200, 0.950, 1.050, 1.000 |" in b_row


def _cli_rounds(monkeypatch, tmp_path, repeats):
    """The rounds ``--repeats N`` runs through the front end's command line, three modes (with ``--doc``, so its header is checked too)."""
    import json
    import types

    from conformance.engines import profile
    from conformance.live.frontend_main import main

    monkeypatch.setattr(profile, "find_engine", lambda spec: types.SimpleNamespace(name="x", live_frontend=_ThreeModes))
    out, doc = tmp_path / "out.json", tmp_path / "report.md"
    argv = [
        "--frontend", "x", "--skip-check", "--bench", "--bench-concurrency", "1", "--prompts", "1:2", "--repeats", str(repeats),
        "--input-len", "8", "--output-len", "4", "--workdir", str(tmp_path), "--json", str(out), "--doc", str(doc),
    ]  # fmt: skip
    assert main(argv) == 0
    runs = json.loads(out.read_text())["bench"]["runs"]
    return [[r["mode"] for r in runs if r["repeat"] == rep] for rep in sorted({r["repeat"] for r in runs})], doc.read_text()


def test_the_cli_rounds_repeats_up_to_whole_cycles_so_each_mode_runs_first_equally_often(monkeypatch, tmp_path, capsys):
    rounds, report = _cli_rounds(monkeypatch, tmp_path, 5)
    assert len(rounds) == 6 and Counter(r[0] for r in rounds) == {"a": 2, "b": 2, "c": 2}
    assert "6 rounds per concurrency" in report  # the header says what ran, not what was asked
    assert "--repeats 5 runs 6 rounds" in capsys.readouterr().out


def test_one_round_stays_one_smoke_run(monkeypatch, tmp_path):
    rounds, report = _cli_rounds(monkeypatch, tmp_path, 1)
    assert rounds == [["a", "b", "c"]] and "1 rounds per concurrency" in report
