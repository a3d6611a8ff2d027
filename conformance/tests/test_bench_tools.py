"""Tests of the benchmark tooling (gate, table, CLI) on synthetic pytest-benchmark JSON: no timing, fast."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import re
import types
from collections import Counter
from typing import Any, Dict, List, Optional

import pytest

from conformance.benchmarks import __main__ as cli
from conformance.benchmarks import gate, results, table
from conformance.benchmarks.__main__ import main


def bench(family: str, op: str, codec: str, median: float, iqr: float = 0.0, **extra: Any) -> Dict[str, Any]:
    info = {"family": family, "op": op, "codec": codec, **extra}
    return {
        "name": f"test[{family}-{codec}-{op}]",
        "fullname": f"conformance/benchmarks/test_x.py::test[{family}-{codec}-{op}]",
        "group": f"{family} {op}",
        "stats": {"median": median, "iqr": iqr, "rounds": 10, "min": median * 0.9, "mean": median},
        "extra_info": info,
    }


def run(*benchmarks: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "machine_info": {"python_version": "3.11.7", "cpu": {"brand_raw": "Test CPU", "count": 2}},
        "commit_info": {"id": "0123456789abcdef", "dirty": False},
        "datetime": "2026-01-01T00:00:00",
        "benchmarks": list(benchmarks),
    }


def recs(*benchmarks: Dict[str, Any]) -> List[results.Record]:
    return results.records_from(run(*benchmarks))


def row(result: gate.GateResult, codec: str, op: str = "roundtrip") -> gate.GateRow:
    (found,) = [r for r in result.rows if r.codec == codec and r.op == op]
    return found


# --- gate -------------------------------------------------------------------


@pytest.mark.parametrize(
    "base, cur, iqr, verdict",
    [
        (1.0, 1.05, 0.0, "ok"),  # within the fixed 10%
        (1.0, 1.11, 0.0, "REGRESSION"),  # just past it
        (1.0, 1.18, 0.10, "ok"),  # a run with a relative IQR of 10% is allowed 2 x 10% = 20%
        (1.0, 1.25, 0.10, "REGRESSION"),
        (1.0, 0.85, 0.0, "faster"),
        (1.0, 0.95, 0.0, "ok"),
    ],
)
def test_gate_threshold_is_max_of_fixed_and_noise(base, cur, iqr, verdict):
    result = gate.compare(
        recs(bench("f", "roundtrip", "reference-v1", base, iqr * base)),
        recs(bench("f", "roundtrip", "reference-v1", cur, iqr * base)),
    )
    assert row(result, "reference-v1").verdict == verdict, row(result, "reference-v1")
    assert result.passed == (verdict != "REGRESSION")


def test_gate_allowance_uses_the_noisier_run_and_is_capped():
    noisy = gate.compare(recs(bench("f", "roundtrip", "reference-v1", 1.0, 0.3)), recs(bench("f", "roundtrip", "reference-v1", 1.5, 0.0)))
    assert row(noisy, "reference-v1").allowed == pytest.approx(0.6)
    assert row(noisy, "reference-v1").verdict == "ok"
    capped = gate.compare(recs(bench("f", "roundtrip", "reference-v1", 1.0, 5.0)), recs(bench("f", "roundtrip", "reference-v1", 2.1, 0.0)))
    assert row(capped, "reference-v1").allowed == 1.0
    assert row(capped, "reference-v1").verdict == "REGRESSION"


def test_gate_only_gates_the_chosen_codecs_by_default():
    base = recs(bench("f", "roundtrip", "pickle", 1.0), bench("f", "roundtrip", "reference-v2", 1.0))
    cur = recs(bench("f", "roundtrip", "pickle", 3.0), bench("f", "roundtrip", "reference-v2", 1.0))
    assert gate.compare(base, cur).passed
    assert not gate.compare(base, cur, codecs=None).passed


def test_gate_normalized_by_pickle_cancels_a_uniformly_slower_machine():
    base = recs(bench("f", "roundtrip", "pickle", 1.0), bench("f", "roundtrip", "reference-v1", 0.25))
    slower_machine = recs(bench("f", "roundtrip", "pickle", 1.5), bench("f", "roundtrip", "reference-v1", 0.375))
    assert not gate.compare(base, slower_machine).passed
    normalized = gate.compare(base, slower_machine, normalize="pickle")
    assert normalized.passed and row(normalized, "reference-v1").current == pytest.approx(0.25)
    real = recs(bench("f", "roundtrip", "pickle", 1.5), bench("f", "roundtrip", "reference-v1", 0.6))
    assert not gate.compare(base, real, normalize="pickle").passed


def test_gate_memory_by_absolute_peak_ratio_and_never_probe_time():
    base = recs(bench("t", "memory", "reference-v2", 3.0, gate_time=False, peak_ratio=1.0))
    same = recs(bench("t", "memory", "reference-v2", 9.0, gate_time=False, peak_ratio=1.05))
    worse = recs(bench("t", "memory", "reference-v2", 3.0, gate_time=False, peak_ratio=2.0))
    assert gate.compare(base, same).passed
    assert row(gate.compare(base, worse), "reference-v2", "memory").verdict == "REGRESSION"


def test_gate_live_and_new_and_missing_benchmarks_do_not_fail():
    base = recs(bench("f", "roundtrip", "reference-v1", 1.0), bench("gone", "encode", "reference-v1", 1.0),
                bench("live-c1", "live", "reference-v1", 5.0, gate_time=False))
    cur = recs(bench("f", "roundtrip", "reference-v1", 1.0), bench("added", "encode", "reference-v1", 1.0),
               bench("live-c1", "live", "reference-v1", 50.0, gate_time=False))
    result = gate.compare(base, cur)
    assert result.passed
    assert {r.family: r.verdict for r in result.rows} == {"f": "ok", "added": "new", "gone": "missing"}


def test_gate_with_nothing_in_common_fails():
    result = gate.compare(recs(bench("a", "encode", "reference-v1", 1.0)), recs(bench("b", "encode", "reference-v1", 1.0)))
    assert not result.passed
    assert "no benchmark in common" in gate.format_result(result)


def test_gate_rejects_bad_thresholds():
    with pytest.raises(ValueError, match="max_threshold"):
        gate.compare([], [], threshold=0.5, max_threshold=0.1)


def test_gate_table_lists_regressions_first():
    base = recs(bench("a", "encode", "reference-v1", 1.0), bench("b", "encode", "reference-v1", 1.0), bench("c", "encode", "reference-v1", 1.0))
    cur = recs(bench("a", "encode", "reference-v1", 0.5), bench("b", "encode", "reference-v1", 2.0), bench("c", "encode", "reference-v1", 1.0))
    text = gate.format_result(gate.compare(base, cur))
    lines = text.splitlines()
    assert lines[2].startswith("| REGRESSION | b encode reference-v1 | 1 s | 2 s | +100.0% | 10% |")
    assert lines[3].startswith("| faster | a encode")
    assert "c encode" not in text  # within noise: shown only with show_all
    assert lines[-1] == "BENCHMARK GATE FAILED: 3 compared, 1 regressed, 1 faster, 1 within noise"


# --- confirmation pass ---------------------------------------------------------


def ref_and_pickle(ref: float, pickle: float = 4.0, family: str = "tensor-1KiB", op: str = "encode", iqr: float = 0.0) -> List[results.Record]:
    return recs(bench(family, op, "pickle", pickle, iqr * pickle), bench(family, op, "reference-v2", ref, iqr * ref))


def flagged_by(base: List[results.Record], cur: List[results.Record]) -> List[gate.GateRow]:
    first = gate.compare(base, cur)
    rows = gate.flagged(first)
    assert rows, "the first comparison must flag something"
    return rows


def test_confirm_a_real_regression_persisting_in_every_alternation():
    base = ref_and_pickle(1.0)
    rows = flagged_by(base, ref_and_pickle(1.5))
    trials = [(ref_and_pickle(1.0), ref_and_pickle(1.5)), (ref_and_pickle(1.02), ref_and_pickle(1.52)), (ref_and_pickle(0.98), ref_and_pickle(1.49))]
    result = gate.confirm(rows, trials)
    (r,) = result.rows
    assert r.verdict == "confirmed" and r.votes == (3, 3)
    assert r.changes[0] == pytest.approx(0.5) and r.vs_yardstick[0] == pytest.approx(0.5)
    assert gate.exit_status(gate.compare(base, ref_and_pickle(1.5)), result) == 1


def test_confirm_clears_a_one_off_spike_of_the_first_comparison():
    # The case of the problem: +59% in the first comparison, while both trees ran the same code.
    base = ref_and_pickle(1.0)
    first = gate.compare(base, ref_and_pickle(1.59))
    trials = [(ref_and_pickle(1.0), ref_and_pickle(1.03)), (ref_and_pickle(1.01), ref_and_pickle(0.99)), (ref_and_pickle(1.0), ref_and_pickle(1.02))]
    result = gate.confirm(gate.flagged(first), trials)
    assert [r.verdict for r in result.rows] == ["noise"]
    assert gate.exit_status(first, result) == 0
    assert gate.exit_status(first) == 1  # without the confirmation pass it would have failed


def test_confirm_needs_a_strict_majority_of_alternations():
    rows = flagged_by(ref_and_pickle(1.0), ref_and_pickle(1.5))
    spike_once = [(ref_and_pickle(1.0), ref_and_pickle(1.8)), (ref_and_pickle(1.0), ref_and_pickle(1.0)), (ref_and_pickle(1.0), ref_and_pickle(1.01))]
    assert gate.confirm(rows, spike_once).rows[0].verdict == "noise"
    # a real +50% whose base side was hit by a spike in one alternation is still confirmed (2 of 3)
    base_spike = [(ref_and_pickle(1.0), ref_and_pickle(1.5)), (ref_and_pickle(1.6), ref_and_pickle(1.5)), (ref_and_pickle(1.0), ref_and_pickle(1.5))]
    assert gate.confirm(rows, base_spike).rows[0].votes == (2, 3)
    assert gate.confirm(rows, base_spike).rows[0].verdict == "confirmed"
    half = base_spike[:2]  # 1 of 2 is not a strict majority
    assert gate.confirm(rows, half).rows[0].verdict == "noise"


def test_confirm_a_slower_machine_during_one_run_is_cancelled_by_the_yardstick():
    rows = flagged_by(ref_and_pickle(1.0), ref_and_pickle(1.5))
    # in each alternation the current run is 50% slower for pickle too: the machine, not the codec
    machine = [(ref_and_pickle(1.0, 4.0), ref_and_pickle(1.5, 6.0)) for _ in range(3)]
    result = gate.confirm(rows, machine)
    assert result.rows[0].verdict == "noise"
    assert result.rows[0].changes[0] == pytest.approx(0.5) and result.rows[0].vs_yardstick[0] == pytest.approx(0.0)
    # without a yardstick measured, the time alone decides
    no_pickle = [(recs(bench("tensor-1KiB", "encode", "reference-v2", 1.0)), recs(bench("tensor-1KiB", "encode", "reference-v2", 1.5)))] * 3
    assert gate.confirm(rows, no_pickle).rows[0].verdict == "confirmed"
    assert gate.confirm(rows, machine, yardstick=None).rows[0].verdict == "confirmed"


def test_confirm_uses_each_alternations_own_noise_allowance():
    rows = flagged_by(ref_and_pickle(1.0), ref_and_pickle(1.5))
    noisy = [(ref_and_pickle(1.0, iqr=0.2), ref_and_pickle(1.3, iqr=0.2)) for _ in range(3)]  # allowed 40%
    result = gate.confirm(rows, noisy)
    assert result.rows[0].allowed[0] == pytest.approx(0.4) and result.rows[0].verdict == "noise"


def test_confirm_keeps_a_regression_that_could_not_be_re_measured():
    base = ref_and_pickle(1.0)
    first = gate.compare(base, ref_and_pickle(1.5))
    for trials in ([], [(base, [])] * 3):
        result = gate.confirm(gate.flagged(first), trials)
        assert [r.verdict for r in result.rows] == ["unmeasured"]
        assert gate.exit_status(first, result) == 1


def test_confirm_against_a_baseline_json_re_measures_the_current_tree_only():
    base = ref_and_pickle(1.0)
    first = gate.compare(base, ref_and_pickle(1.5))
    persisting = gate.confirm(gate.flagged(first), [(base, ref_and_pickle(1.5))] * 3, base_remeasured=False)
    gone = gate.confirm(gate.flagged(first), [(base, ref_and_pickle(1.01))] * 3, base_remeasured=False)
    assert persisting.rows[0].verdict == "confirmed" and gone.rows[0].verdict == "noise"
    text = gate.format_confirmation(persisting, first)
    assert "in this tree only" in text and "cannot be re-measured" in text


def test_confirm_never_re_measures_memory_and_keeps_its_regression():
    base = recs(bench("t", "memory", "reference-v2", 3.0, gate_time=False, peak_ratio=1.0), *[bench("t", "encode", c, 1.0) for c in ("pickle", "reference-v2")])
    cur = recs(bench("t", "memory", "reference-v2", 3.0, gate_time=False, peak_ratio=2.0), *[bench("t", "encode", c, v) for c, v in (("pickle", 1.0), ("reference-v2", 1.5))])
    first = gate.compare(base, cur)
    assert [r.op for r in gate.flagged(first)] == ["encode"]
    cleared = gate.confirm(gate.flagged(first), [(base, base)] * 3)
    assert cleared.rows[0].verdict == "noise" and gate.exit_status(first, cleared) == 1
    assert "1 memory regression(s) not re-measured" in gate.format_confirmation(cleared, first)


def test_confirmation_selection_and_k_expression():
    cur = recs(bench("tensor-1KiB", "encode", "pickle", 1.0), bench("tensor-1KiB", "encode", "reference-v2", 1.5),
               bench("tensor-1KiB", "roundtrip", "reference-v2", 1.5), bench("tensor-1KiB", "roundtrip", "pickle", 1.0))
    rows = flagged_by(recs(*[bench("tensor-1KiB", op, c, 1.0) for op in ("encode", "roundtrip") for c in ("pickle", "reference-v2")]), cur)
    names = gate.confirmation_selection(rows, cur)
    assert len(names) == 4 and len(set(names)) == 4  # two flagged, each with its pickle yardstick
    assert gate.confirmation_selection(rows, cur, yardstick=None) == [r.name for r in rows]
    expr, bad = gate.k_expression(names + ["conformance/x.py::test[odd name]"])
    assert bad == ["conformance/x.py::test[odd name]"]
    assert set(expr.split(" or ")) == {f"test[tensor-1KiB-{c}-{op}]" for c in ("pickle", "reference-v2") for op in ("encode", "roundtrip")}


def test_confirmation_output_says_what_was_flagged_confirmed_and_cleared():
    base = ref_and_pickle(1.0) + ref_and_pickle(1.0, op="roundtrip")
    first = gate.compare(base, ref_and_pickle(1.59) + ref_and_pickle(1.76, op="roundtrip"))
    first_text = gate.format_result(first, final=False)
    assert first_text.splitlines()[-1].startswith("first comparison: 2 compared, 2 flagged")
    assert "BENCHMARK GATE" not in first_text
    trials = [(base, ref_and_pickle(1.0) + ref_and_pickle(1.5, op="roundtrip"))] * 3
    result = gate.confirm(gate.flagged(first), trials)
    text = gate.format_confirmation(result, first)
    assert "re-measured in both trees, interleaved (3 alternations" in text
    assert "| CONFIRMED | tensor-1KiB roundtrip reference-v2 | +76.0% | +50%, +50%, +50% | +50%, +50%, +50% | 10%, 10%, 10% | 3/3 |" in text
    assert "| cleared (noise) | tensor-1KiB encode reference-v2 | +59.0% | +0%, +0%, +0% |" in text
    assert text.splitlines()[-1] == "BENCHMARK GATE FAILED: 2 compared, 1 regressed (1 confirmed by re-measurement, 0 memory), 1 flagged then cleared as noise"


# --- table ------------------------------------------------------------------


def corpus_run(ref_v1: float = 1.0, sglang: Optional[float] = 1.5) -> List[results.Record]:
    out = []
    for family, pickle_rt in (("small", 4.0), ("medium", 6.0), ("big", 2.0)):
        out.append(bench(family, "encode", "pickle", pickle_rt / 2, bytes_on_wire=200))
        out.append(bench(family, "encode", "reference-v1", ref_v1 / 2, bytes_on_wire=100))
        out.append(bench(family, "roundtrip", "pickle", pickle_rt))
        out.append(bench(family, "roundtrip", "reference-v1", ref_v1))
        out.append(bench(family, "roundtrip", "reference-v2", ref_v1 / 2))
        if sglang is not None:
            out.append(bench(family, "roundtrip", "sglang", sglang))
    return results.records_from(run(*out))


def test_table_cells_are_median_and_speedup_over_pickle():
    text = table.render(corpus_run(), command="python -m conformance.benchmarks run", machine="Test CPU")
    assert "Command: `python -m conformance.benchmarks run`" in text
    assert "| family | measure | pickle (baseline) | reference wire v1 | reference wire v2 | SGLang 0.5.23 |" in text
    assert "| small | encode | 2 s | 500 ms (4.00×) | – | – |" in text
    assert "|  | round trip | 4 s | 1 s (4.00×) | 500 ms (8.00×) | 1.5 s (2.67×) |" in text
    assert "|  | bytes on the wire | 200 B (1.00×) | 100 B (0.50×) | – | – |" in text


def test_table_targets_met_and_missed():
    met = "\n".join(table.targets(corpus_run()))
    assert "met: reference wire v1 round trip at least 3× pickle at the corpus median: 4.00× over 3 families" in met
    assert "met: reference wire v1 round trip never slower than pickle: slowest 2.00× (big)" in met
    assert "met: reference wire v1 round trip at least 1.2× SGLang 0.5.23's codec at the median: 1.50×" in met
    missed = "\n".join(table.targets(corpus_run(ref_v1=3.0, sglang=3.3)))
    assert "**MISSED**: reference wire v1 round trip at least 3× pickle at the corpus median: 1.33×" in missed
    assert "**MISSED**: reference wire v1 round trip never slower than pickle: slowest 0.67× (big); slower on big." in missed
    assert "**MISSED**: reference wire v1 round trip at least 1.2× SGLang" in missed
    assert "met: reference wire v1 round trip at least 1× SGLang 0.5.23's codec in every family." in met
    behind = "\n".join(table.targets(corpus_run(ref_v1=1.0, sglang=0.9)))
    assert "**MISSED**: reference wire v1 round trip at least 1× SGLang 0.5.23's codec in every family; behind on big 0.90×, medium 0.90×, small 0.90×." in behind


def test_table_v1_large_tensor_round_trip_target_counts_memcpys():
    def lines(v1_seconds):
        return table.targets(
            recs(
                bench("tensor-64MiB", "roundtrip", "memcpy", 0.01, payload_bytes=64 << 20),
                bench("tensor-64MiB", "roundtrip", "reference-v1", v1_seconds),
                bench("tensor-64MiB", "roundtrip", "pickle", 0.1),
            )
        )

    target = "wire v1 round trip of a 64 MiB tensor costs at most 4 memcpy of its bytes (round trip / memcpy: tensor-64MiB"
    assert f"met: {target} 3.50)." in lines(0.035)
    assert f"**MISSED**: {target} 4.50)." in lines(0.045)


def test_table_says_what_was_not_measured():
    lines = "\n".join(table.targets(corpus_run(sglang=None)))
    assert "SGLang 0.5.23: not measured" in lines
    assert "one memcpy: not measured" in lines
    assert "Decode peak memory: not measured" in lines


def test_table_memcpy_memory_zmq_and_live_rows():
    big = 64 << 20
    records = recs(
        bench("tensor-64MiB", "roundtrip", "pickle", 0.1),
        bench("tensor-64MiB", "roundtrip", "reference-v2", 0.001),
        bench("tensor-64MiB", "roundtrip", "memcpy", 0.01, payload_bytes=big),
        bench("tensor-64MiB", "memory", "reference-v2", 2.0, gate_time=False, peak_ratio=1.0),
        bench("tensor-64MiB", "memory", "reference-v1", 2.0, gate_time=False, peak_ratio=2.0),
        bench("tensor-1MiB", "zmq", "reference-v2", 0.001, bytes_on_wire=1 << 20),
        bench("live-c1", "live", "reference-v1", 5.0, gate_time=False, requests_per_s=12.5, mean_itl_s=0.002),
    )
    text = table.render(records)
    assert "|  | decode peak memory / payload | – | 2.00 | 1.00 | – |" in text
    assert "1 ms; 1,000/s, 2.10 GB/s" in text
    assert "| live-c1 | live: req/s, mean ITL | – | 12.5/s, 2 ms | – | – |" in text
    assert "met: wire v2 round trip of a tensor of 16 MiB or more costs less than one memcpy of its bytes (round trip / memcpy: tensor-64MiB 0.1)" in text
    assert "met: wire v2 decode peak memory at most 1.1× the payload (tensor-64MiB 1.00). Wire v1" in text
    assert "Wire v1 from a writable frame (tensors are views of it where their bytes are aligned, copied where not; see reference_codec/wire.py, Copies per buffer): over on tensor-64MiB 2.00." in text


# --- command line -------------------------------------------------------------


def test_cli_report_and_gate(tmp_path, capsys):
    base, cur, md = tmp_path / "base.json", tmp_path / "cur.json", tmp_path / "table.md"
    base.write_text(json.dumps(run(bench("f", "roundtrip", "pickle", 4.0), bench("f", "roundtrip", "reference-v1", 1.0))))
    cur.write_text(json.dumps(run(bench("f", "roundtrip", "pickle", 4.0), bench("f", "roundtrip", "reference-v1", 1.5))))
    assert main(["report", str(cur), "--out", str(md)]) == 0
    assert "Test CPU (2 cores), Python 3.11.7, commit 0123456789" in md.read_text()
    assert main(["gate", str(base), str(cur)]) == 1
    assert "BENCHMARK GATE FAILED" in capsys.readouterr().out
    assert main(["gate", str(base), str(cur), "--threshold", "0.6", "--max-threshold", "1"]) == 0
    assert main(["gate", str(base), str(base), "--codecs", "sglang"]) == 2


def fake_pytest(calls: List[tuple], base: Dict[str, float], cur: Dict[str, float], remeasured: Dict[str, List[float]]):
    """A stand-in for ``_pytest``: writes synthetic results (reference-v2 time per side) instead of timing."""

    def _pytest(out_json, cwd, extra, full, env_extra=None, quiet=False):
        side = "base" if cwd == "BASE" else "current"
        k = extra[extra.index("-k") + 1] if "-k" in extra else None
        calls.append((side, k, quiet))
        if k is None:
            ref = (base if side == "base" else cur)["ref"]
        else:
            ref = remeasured[side].pop(0)
        data = run(*[bench(f, op, c, v) for f in ("tensor-1KiB", "control-AbortReq") for op in ("encode",)
                     for c, v in (("pickle", 4.0), ("reference-v2", ref if f == "tensor-1KiB" else 1.0))
                     if k is None or f"[{f}-{c}-{op}]" in k])
        with open(out_json, "w") as fh:
            json.dump(data, fh)
        return 0

    return _pytest


@contextlib.contextmanager
def fake_tree(ref):
    yield "BASE"


def test_cli_run_confirmation_pass_re_measures_flagged_benchmarks_interleaved(tmp_path, monkeypatch, capsys):
    calls: List[tuple] = []
    # first comparison +59% (the machine's load changed), then the same time on both sides
    monkeypatch.setattr(cli, "_pytest", fake_pytest(calls, {"ref": 1.0}, {"ref": 1.59}, {"base": [1.0] * 3, "current": [1.02, 0.99, 1.01]}))
    monkeypatch.setattr(cli, "base_tree", fake_tree)
    assert main(["run", "--out-dir", str(tmp_path), "--baseline-ref", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert calls[:2] == [("base", None, False), ("current", None, False)]
    k = "test[tensor-1KiB-reference-v2-encode] or test[tensor-1KiB-pickle-encode]"
    assert calls[2:] == [("base", k, True), ("current", k, True), ("current", k, True), ("base", k, True), ("base", k, True), ("current", k, True)]
    assert "flagged: tensor-1KiB encode reference-v2 (+59.0%)" in out
    assert "| cleared (noise) | tensor-1KiB encode reference-v2 | +59.0% |" in out
    assert out.splitlines()[-1] == "BENCHMARK GATE PASSED: 2 compared, 0 regressed (0 confirmed by re-measurement, 0 memory), 1 flagged then cleared as noise"

    calls.clear()
    monkeypatch.setattr(cli, "_pytest", fake_pytest(calls, {"ref": 1.0}, {"ref": 1.5}, {"base": [1.0] * 3, "current": [1.5] * 3}))
    assert main(["run", "--out-dir", str(tmp_path), "--baseline-ref", "HEAD"]) == 1
    assert "| CONFIRMED | tensor-1KiB encode reference-v2 | +50.0% | +50%, +50%, +50% |" in capsys.readouterr().out

    calls.clear()
    assert main(["run", "--out-dir", str(tmp_path), "--baseline-ref", "HEAD", "--confirm-runs", "0"]) == 1
    assert len(calls) == 2 and "no confirmation pass" in capsys.readouterr().out


def test_cli_run_with_a_baseline_json_re_measures_the_current_tree_only(tmp_path, monkeypatch, capsys):
    base_json = tmp_path / "base.json"
    base_json.write_text(json.dumps(run(*[bench(f, "encode", c, v) for f in ("tensor-1KiB", "control-AbortReq") for c, v in (("pickle", 4.0), ("reference-v2", 1.0))])))
    calls: List[tuple] = []
    monkeypatch.setattr(cli, "_pytest", fake_pytest(calls, {}, {"ref": 1.6}, {"current": [1.6, 1.0, 1.55]}))
    assert main(["run", "--out-dir", str(tmp_path / "out"), "--baseline", str(base_json)]) == 1
    out = capsys.readouterr().out
    assert [c[0] for c in calls] == ["current"] * 4
    assert "in this tree only (a baseline JSON without --baseline-ref cannot be re-measured)" in out
    assert "| CONFIRMED | tensor-1KiB encode reference-v2 | +60.0% | +60%, +0%, +55% |" in out


def test_the_candidate_column_measures_the_codec_named_in_the_environment(monkeypatch):
    from conformance.benchmarks import codecs

    monkeypatch.delenv(codecs.CANDIDATE_ENV, raising=False)
    assert codecs.CANDIDATE_ENV in codecs.unavailable("candidate")
    monkeypatch.setenv(codecs.CANDIDATE_ENV, "reference-v2")
    codecs.get_codec.cache_clear()
    try:
        assert codecs.unavailable("candidate") is None
        from reference_codec.samples import flush_cache

        candidate = codecs.get_codec("candidate")
        msg = flush_cache()
        frames = candidate.encode(candidate.prepare(msg))
        assert candidate.decode(frames) == msg
    finally:
        codecs.get_codec.cache_clear()


def test_verdict_times_runs_the_suite_and_tabulates_its_closing_line():
    from conformance.benchmarks.verdict_times import measure, render

    timed = measure("reference -k 'golden and y_abort_req'")
    assert timed.exit_status == 0 and timed.seconds > 0
    assert timed.closing_line.startswith("CONFORMANCE SUITE PASSED: 1 successes")
    table = render([timed], "python -m conformance.benchmarks verdict --run reference")
    assert "commit " in table.splitlines()[0] and "| `python -m conformance --codec reference -n 2 -k 'golden and y_abort_req'` |" in table


# --- interleaved ------------------------------------------------------------


def test_interleaved_times_every_codec_in_each_round_in_a_balanced_order_and_takes_the_ratio_inside_the_round(monkeypatch):
    from conformance.benchmarks import interleaved

    # pickle is 3 times slower than the reference whenever both run at the same speed; the machine slows
    # down 10x in the middle of round 2 and stays slow. Round 2 runs pickle first (the balanced order), so
    # its own ratio is 0.3; the ratio of the medians would say 1.65, the median of the rounds' ratios says 3
    speeds = iter([1.0, 1.0] + [1.0, 1.0, 1.0, 10.0, 10.0, 10.0, 10.0, 10.0])
    order = []

    def batch(call, n):
        order.append(call.__name__)
        return (3.0 if call.__name__ == "slow" else 1.0) * next(speeds)

    monkeypatch.setattr(interleaved, "_batch", batch)
    original = interleaved._call

    def call(name, op, msg):
        fn = original(name, op, msg)

        def slow():
            return fn()

        def fast():
            return fn()

        return slow if name == "pickle" else fast

    monkeypatch.setattr(interleaved, "_call", call)
    # three rounds asked, four run: a whole number of cycles, so each codec runs first twice
    (row,) = interleaved.measure(["reference-v1", "pickle"], ["control-FlushCacheReqInput"], rounds=3)
    assert order[2:] == ["fast", "slow", "slow", "fast", "fast", "slow", "slow", "fast"]  # each codec first in turn, not the first codec always
    assert row.family == "control-FlushCacheReqInput" and row.op == "round trip"
    assert row.speedup == {"pickle": 3.0}
    assert row.seconds == {"reference-v1": 10.0, "pickle": 16.5}


def test_interleaved_times_each_codec_with_code_of_its_own(monkeypatch):
    import inspect

    from conformance.benchmarks import interleaved

    # CPython specializes a call site for the function it calls: a loop or call shared by two codecs favours one
    seen = []

    def hot(call, n):
        seen.append((id(inspect.currentframe().f_code), id(call.__code__)))
        return 1.0

    def cold(call, n, filler):
        seen.append((id(inspect.currentframe().f_code), id(call.__code__)))
        return 1.0

    monkeypatch.setattr(interleaved, "_batch", hot)
    monkeypatch.setattr(interleaved, "_cold_batch", cold)
    for evict in (0, 1024):
        seen.clear()
        interleaved.measure(["pickle", "pickle@again", "reference-v1"], ["control-AbortReq"], rounds=6, evict=evict)
        rounds = seen[3:]  # after one calibration call each, outside the rounds
        loops_per_call = {}
        for loop, call in rounds:
            loops_per_call.setdefault(call, set()).add(loop)
        assert len(rounds) == 18 and len(loops_per_call) == 3  # a call of its own per codec, the alias's included
        assert all(len(loops) == 1 for loops in loops_per_call.values())  # each timed by one loop
        assert len(set().union(*loops_per_call.values())) == 3  # and no loop shared between codecs


def test_interleaved_rounds_are_whole_cycles_of_the_balanced_order(monkeypatch, capsys):
    from conformance.benchmarks import interleaved

    firsts = []
    monkeypatch.setattr(interleaved, "_batch", lambda call, n: 1.0)
    real_orders = interleaved.round_orders
    monkeypatch.setattr(interleaved, "round_orders", lambda modes, rounds: firsts.extend(o[0] for o in real_orders(modes, rounds)) or real_orders(modes, rounds))
    interleaved.measure(["reference-v1", "pickle"], ["control-AbortReq"], rounds=15)
    assert Counter(firsts) == {"reference-v1": 8, "pickle": 8}  # 15 asked: 8 and 7 would put the median inside the first codec's group
    firsts.clear()
    interleaved.measure(["reference-v1", "pickle", "pickle-oob"], ["control-AbortReq"], rounds=15)
    assert Counter(firsts) == {"reference-v1": 6, "pickle": 6, "pickle-oob": 6}
    monkeypatch.undo()
    assert main(["interleaved", "--codecs", "reference-v1,pickle", "--families", "control-AbortReq", "--rounds", "3"]) == 0
    assert "(4 rounds in one process;" in capsys.readouterr().out  # the header says what ran


def test_each_codec_is_built_first_in_as_many_processes_as_the_others():
    from conformance.benchmarks import interleaved

    two = [interleaved.build_order(["a", "b"], i) for i in range(4)]
    assert two == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]
    three = [interleaved.build_order(["a", "b", "c"], i) for i in range(6)]
    assert Counter(order[0] for order in three) == {"a": 2, "b": 2, "c": 2}
    assert all(sorted(order) == ["a", "b", "c"] for order in three)


def test_interleaved_builds_the_codecs_and_their_messages_in_the_build_order(monkeypatch):
    from conformance.benchmarks import interleaved

    built, real_get, real_call = [], interleaved.get_codec, interleaved._call
    calls = {}

    def call(name, op, msg):
        built.append(("message", name))
        calls[name] = real_call(name, op, msg)
        return calls[name]

    def loop(fn, call, *args):  # the timing loop of the codec whose call it binds
        built.append(("loop", next(name for name, c in calls.items() if c.__closure__ is call.__closure__)))
        return functools.partial(fn, call, *args)

    monkeypatch.setattr(interleaved, "get_codec", lambda name: built.append(("codec", name)) or real_get(name))
    monkeypatch.setattr(interleaved, "_call", call)
    monkeypatch.setattr(interleaved, "functools", types.SimpleNamespace(partial=loop))
    monkeypatch.setattr(interleaved, "_batch", lambda call, n: 1.0)
    (row,) = interleaved.measure(["reference-v1", "pickle+b"], ["control-AbortReq"], rounds=2, build_order=["pickle+b", "reference-v1"])
    assert list(dict.fromkeys(built)) == [
        ("codec", "pickle+b"), ("codec", "reference-v1"), ("message", "pickle+b"), ("message", "reference-v1"), ("loop", "pickle+b"), ("loop", "reference-v1")
    ]
    assert list(row.seconds) == ["reference-v1", "pickle+b"] and list(row.speedup) == ["pickle+b"]  # the table keeps the named order
    with pytest.raises(ValueError, match="not an order of the codecs"):
        interleaved.measure(["reference-v1", "pickle"], ["control-AbortReq"], build_order=["pickle", "pickle"])


def test_each_process_builds_the_codecs_in_its_own_rotation(monkeypatch):
    import concurrent.futures

    from conformance.benchmarks import interleaved
    from conformance.interrupts import stop_with_parent

    orders = []

    class InThisProcess:
        def __init__(self, max_workers, mp_context, initializer):
            # Each worker ends itself if this process dies without ending it (SIGKILL).
            assert initializer is stop_with_parent

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            done = concurrent.futures.Future()
            if fn is interleaved.measure:
                orders.append(args[-1])
                done.set_result([interleaved.Row("f", "round trip", {"a": 1.0, "b": 1.0}, {"b": 1.0})])
            else:
                done.set_result(-1)  # the worker's pid: no process has it
            return done

    monkeypatch.setattr(interleaved.concurrent.futures, "ProcessPoolExecutor", InThisProcess)
    interleaved.measure_in_processes(["a", "b"], ["f"], processes=4)
    assert orders == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]


def test_interleaved_measures_real_calls_and_renders_a_table():
    from conformance.benchmarks import interleaved

    rows = interleaved.measure(["reference-v1", "pickle"], ["control-AbortReq"], ops=interleaved.OPS, rounds=2)
    assert [r.op for r in rows] == list(interleaved.OPS)
    assert all(r.seconds["reference-v1"] > 0 and r.speedup["pickle"] > 0 for r in rows)
    text = interleaved.render(rows, ["reference-v1", "pickle"], "python -m conformance.benchmarks interleaved", 2)
    assert text.startswith("Measured interleaved (2 rounds")
    assert "| control-AbortReq | decode | " in text


def test_an_a_a_table_reads_the_targets_to_show_what_they_say_when_nothing_differs():
    from conformance.benchmarks import interleaved

    def table(first: str, other: str) -> str:
        rows = [interleaved.Row(f"f{i}", "round trip", {first: 1e-6, other: 1e-6}, {other: x}) for i, x in enumerate((0.99, 1.0, 1.02))]
        return interleaved.render(rows, [first, other], "python -m conformance.benchmarks interleaved", 16, processes=10)

    for second in ("reference-v1+b", "reference-v1@b"):
        assert f"- NOT SHOWN: reference-v1 round trip at least 1x {second} in every family; behind on f0 0.99x" in table("reference-v1", second)
    assert "round trip at least" not in table("reference-v1", "pickle")  # two different codecs, neither the target: no target


def test_interleaved_evict_times_each_call_alone_after_refilling_the_caches(monkeypatch):
    from conformance.benchmarks import interleaved

    seen = []
    monkeypatch.setattr(interleaved, "_cold_batch", lambda call, n, filler: seen.append((n, len(filler))) or 1.0)
    (row,) = interleaved.measure(["reference-v1", "pickle"], ["control-AbortReq"], rounds=4, evict=1 << 20)
    assert seen == [(interleaved.COLD_CALLS, 1 << 20)] * 8  # two codecs, four rounds: never a hot batch
    assert row.speedup == {"pickle": 1.0}
    with pytest.raises(ValueError, match="evict"):
        interleaved.measure(["reference-v1", "pickle"], ["control-AbortReq"], evict=-1)


def test_interleaved_cold_calls_are_real_and_the_table_says_how_they_were_timed(capsys):
    from conformance.benchmarks.__main__ import main

    assert main(["interleaved", "--codecs", "reference-v1,pickle", "--families", "control-AbortReq", "--rounds", "2", "--evict", "1MiB"]) == 0
    text = capsys.readouterr().out
    assert "every call alone after 1MiB are copied: cold caches" in text and "--evict 1MiB" in text
    assert "| control-AbortReq | round trip | " in text
    with pytest.raises(SystemExit, match="--evict: size must look like"):
        main(["interleaved", "--codecs", "reference-v1,pickle", "--evict", "lots"])


def test_interleaved_processes_combine_into_medians_and_keep_the_lowest_and_highest():
    from conformance.benchmarks.interleaved import Row, combine, render

    def run(ref_seconds: float, speedup: float) -> List[Row]:
        return [Row("f", "round trip", {"reference-v1": ref_seconds, "sglang": ref_seconds * speedup}, {"sglang": speedup})]

    # three processes: the odd one out (0.87x) neither sets the figure nor disappears from the table
    (row,) = combine([run(3.0, 0.87), run(1.0, 1.10), run(2.0, 1.19)])
    assert row.speedup == {"sglang": 1.10}
    assert row.seconds == {"reference-v1": 2.0, "sglang": pytest.approx(2.38)}  # each codec its own median: 2.61, 1.1, 2.38
    assert row.spread == {"sglang": (0.87, 1.19)} and row.process_speedups == {"sglang": (0.87, 1.10, 1.19)}
    text = render([row], ["reference-v1", "sglang"], "cmd", 15, processes=3)
    assert "15 rounds in each of 3 fresh processes" in text and "(1.10x, 0.87-1.19)" in text
    assert "One process" not in text
    (single,) = combine([run(1.0, 1.10)])
    assert single.spread == {} and single.process_speedups == {}
    assert "One process: " in render([single], ["reference-v1", "sglang"], "cmd", 15)


def test_interleaved_refuses_to_combine_runs_of_different_rows():
    from conformance.benchmarks.interleaved import Row, combine

    a = [Row("f", "round trip", {"x": 1.0}, {})]
    b = [Row("g", "round trip", {"x": 1.0}, {})]
    with pytest.raises(ValueError, match="disagree"):
        combine([a, b])
    with pytest.raises(ValueError):
        combine([a, a + b])


def test_interleaved_in_fresh_processes_measures_real_calls():
    from conformance.benchmarks import interleaved

    rows = interleaved.measure_in_processes(["reference-v1", "pickle"], ["control-AbortReq"], rounds=2, processes=2)
    (row,) = rows
    low, high = row.spread["pickle"]
    assert 0 < low <= row.speedup["pickle"] <= high and row.seconds["reference-v1"] > 0
    with pytest.raises(ValueError, match="at least 1"):
        interleaved.measure_in_processes(["reference-v1", "pickle"], ["control-AbortReq"], processes=0)


def test_a_codec_under_an_alias_is_the_same_codec_under_another_name():
    from conformance.benchmarks import codecs

    plain, alias = codecs.get_codec("pickle"), codecs.get_codec("pickle@again")
    assert alias.name == "pickle@again" and alias.encode == plain.encode and alias.decode == plain.decode
    assert codecs.unavailable("candidate@b") == codecs.unavailable("candidate")
    for bad in ("@b", "pickle@", "@"):
        with pytest.raises(ValueError, match="write NAME@TAG"):
            codecs.get_codec(bad)
    with pytest.raises(ValueError, match="unknown benchmark codec 'nope'"):
        codecs.get_codec("nope@b")


def test_a_codec_under_an_instance_alias_is_a_second_instance_of_the_same_codec():
    from conformance.benchmarks import codecs, corpus

    plain, second = codecs.get_codec("reference-v1"), codecs.get_codec("reference-v1+b")
    assert second.name == "reference-v1+b" and second is codecs.get_codec("reference-v1+b")  # one instance per tag
    assert second.encode.__self__ is not plain.encode.__self__  # its own codec object
    assert codecs.get_codec("reference-v1+c").encode.__self__ is not second.encode.__self__
    assert codecs.get_codec("reference-v1+b@x").encode == second.encode  # an alias of the second instance is that instance
    msg = corpus.build("control-AbortReq")
    assert second.encode(msg) == plain.encode(msg) and second.decode(plain.encode(msg)) == msg
    assert codecs.unavailable("candidate+b") == codecs.unavailable("candidate")
    for bad in ("+b", "pickle+", "+"):
        with pytest.raises(ValueError, match=r"write NAME\+TAG"):
            codecs.get_codec(bad)
    with pytest.raises(ValueError, match="unknown benchmark codec 'nope'"):
        codecs.get_codec("nope+b")


def test_interleaved_times_a_codec_against_itself_only_under_an_alias():
    from conformance.benchmarks import interleaved

    with pytest.raises(ValueError, match=r"codecs \['pickle'\] named twice: .* NAME@TAG"):
        interleaved.measure(["pickle", "reference-v1", "pickle"], ["control-AbortReq"], rounds=1)
    (row,) = interleaved.measure(["pickle", "pickle@again"], ["control-AbortReq"], rounds=2)
    assert set(row.seconds) == {"pickle", "pickle@again"} and row.speedup["pickle@again"] > 0
    (row,) = interleaved.measure(["pickle", "pickle+two"], ["control-AbortReq"], rounds=2)
    assert set(row.seconds) == {"pickle", "pickle+two"} and row.speedup["pickle+two"] > 0


def test_interleaved_needs_two_available_codecs():
    from conformance.benchmarks import interleaved

    with pytest.raises(ValueError, match="at least two codecs"):
        interleaved.measure(["reference-v1"], ["control-AbortReq"])


def test_interleaved_targets_against_sglang_met_and_missed():
    from conformance.benchmarks.interleaved import Row, targets

    def rows(*ups: float) -> List[Row]:
        return [Row(f"f{i}", "round trip", {}, {"sglang": x}) for i, x in enumerate(ups)]

    met = targets(rows(1.1, 1.3, 1.25), "reference-v1")
    assert met[0].startswith("met: reference-v1 round trip at least 1.2x sglang at the corpus median: 1.25x over 3 families")
    assert met[1] == "met: reference-v1 round trip at least 1x sglang in every family: slowest f0 1.10x."
    missed = targets(rows(0.9, 1.3, 1.1), "reference-v1")
    assert missed[0].startswith("**MISSED**") and "1.10x over 3 families" in missed[0]
    # one process cannot tell a family behind from its process-to-process movement
    assert missed[1].startswith("NOT SHOWN") and "behind on f0 0.90x (NOT SHOWN: one process, too few for a 98.33% interval: --processes 7)" in missed[1]
    assert targets(rows(1.0), "reference-v1", other="pickle") == []
    # a figure just below a target keeps the decimals it takes not to round onto it
    near = targets(rows(1.197, 0.998, 1.3), "reference-v1")
    assert "**MISSED**: reference-v1 round trip at least 1.2x sglang at the corpus median: 1.197x" in near[0]
    assert "behind on f1 0.998x (NOT SHOWN" in near[1]
    assert "at the corpus median: 1.1998x" in targets(rows(1.1998, 1.3, 1.0), "reference-v1")[0]  # three decimals would print 1.200


def _family(name: str, *per_process: float):
    """An interleaved row of ``name`` combined from one process per speed-up over sglang."""
    from conformance.benchmarks.interleaved import Row, combine

    runs = [[Row(name, "round trip", {}, {"sglang": x})] for x in per_process]
    (row,) = combine(runs)
    return row


def test_interleaved_every_family_target_reads_a_family_behind_over_its_processes():
    from conformance.benchmarks.interleaved import targets

    # two families: each interval at 97.5%, so that both hold together at 95%; ten processes give the 2nd lowest and 2nd highest
    ahead = _family("ahead", 1.1, 1.2, 1.15, 1.3, 1.1, 1.2, 1.1, 1.2, 1.15, 1.3)
    unsure = _family("unsure", 0.97, 0.99, 0.98, 1.02, 0.99, 1.01, 0.96, 0.99, 1.03, 0.98)
    line = targets([ahead, unsure], "reference-v1")[1]
    assert line.startswith("NOT SHOWN: reference-v1 round trip at least 1x sglang in every family; behind on unsure 0.99x")
    assert "its 97.5% interval over 10 processes, 0.97-1.02, holds 1x" in line
    assert line.endswith("(each family's interval at 97.5%, so that the 2 hold together at 95%).")
    # every process behind: the interval lies below 1x
    slow = _family("slow", 0.33, 0.32, 0.36, 0.34, 0.33, 0.35, 0.34, 0.33, 0.31, 0.37)
    line = targets([ahead, unsure, slow], "reference-v1")[1]
    assert line.startswith("**MISSED**") and "slow 0.34x (its 98.33% interval over 10 processes, 0.31-0.37, is below 1x)" in line
    # too few processes for the interval: the processes cannot tell, and the line says how many would
    few = _family("few", 0.33, 0.32, 0.36)
    line = targets([ahead, few], "reference-v1")[1]
    assert line.startswith("NOT SHOWN") and "few 0.33x (NOT SHOWN: 3 processes, too few for a 97.5% interval: --processes 7)" in line
    # an interval's end just below 1x keeps a third decimal: "0.95-1.00, is below 1x" would read as a contradiction
    edge = _family("edge", 0.95, 0.97, 0.96, 0.998, 0.97, 0.96, 0.94, 0.97, 0.96, 0.999)
    assert "edge 0.96x (its 97.5% interval over 10 processes, 0.95-0.998, is below 1x)" in targets([ahead, edge], "reference-v1")[1]


def test_interleaved_every_family_verdict_holds_at_95_percent_for_all_the_families_together():
    from conformance.benchmarks.interleaved import processes_for_a_verdict, targets

    # 25 families where nothing differs: each family's 6 processes all fall below 1x with chance 1/64, so one of
    # 25 does in a third of such runs; read at 95% each, this one would be MISSED
    level = [_family(f"even-{i}", *(1.01, 0.99) * 3) for i in range(24)]
    below = _family("below", 0.995, 0.99, 0.998, 0.997, 0.99, 0.996)
    line = targets([*level, below], "sglang@a")[1]
    assert line.startswith("NOT SHOWN"), line
    assert "below 0.996x (NOT SHOWN: 6 processes, too few for a 99.8% interval: --processes 10)" in line
    assert processes_for_a_verdict(25) == 10 and processes_for_a_verdict(1) == 6
    # ten processes all behind: below 1x at 99.8%, so MISSED
    level = [_family(f"even-{i}", *(1.01, 0.99) * 5) for i in range(24)]
    slow = _family("slow", 0.33, 0.32, 0.36, 0.34, 0.33, 0.35, 0.34, 0.33, 0.31, 0.37)
    line = targets([*level, slow], "reference-v1")[1]
    assert line.startswith("**MISSED**") and "slow 0.34x (its 99.8% interval over 10 processes, 0.31-0.37, is below 1x)" in line
    assert line.endswith("(each family's interval at 99.8%, so that the 25 hold together at 95%).")


def test_interleaved_command_refuses_unknown_families_operations_and_codecs_by_name():
    with pytest.raises(SystemExit, match=r"unknown families \['nope'\]"):
        main(["interleaved", "--codecs", "reference-v1,pickle", "--families", "nope"])
    with pytest.raises(SystemExit, match=r"unknown operations \['roundtrip'\]"):
        main(["interleaved", "--codecs", "reference-v1,pickle", "--ops", "roundtrip"])
    with pytest.raises((SystemExit, ValueError), match="unknown benchmark codec 'nope'"):
        main(["interleaved", "--codecs", "reference-v1,nope", "--families", "control-AbortReq", "--rounds", "1"])


# --- an engine's benchmark codecs -------------------------------------------


def fake_engine(target: Optional[str] = "fake"):
    """An engine with one benchmark codec (the reference codec under another name) and one whose package is missing."""
    from conformance.benchmarks.codecs import BenchCodec
    from conformance.engines import Engine
    from reference_codec import ReferenceCodec

    def fake():
        codec = ReferenceCodec()
        return BenchCodec("fake", lambda msg: msg, codec.encode, codec.decode)

    def absent():
        raise ImportError("Absent 2.0 is not installed")

    return Engine(
        name="fake-engine",
        description="an engine of the tests",
        message_types=dict,
        message_strategy=lambda cls: None,
        codecs={},
        pickle_baseline=lambda: None,
        bench_codecs={"fake": fake, "absent": absent},
        bench_target=target,
        bench_labels={"fake": "Fake 1.0"},
    )


@pytest.fixture
def with_engine(monkeypatch):
    """Make the benchmarks measure the bench codecs of the engine passed in, for the test's duration."""
    from conformance.benchmarks import codecs

    def use(engine):
        monkeypatch.setattr(codecs, "bench_engine", lambda: engine)
        codecs.get_codec.cache_clear()
        return engine

    yield use
    codecs.get_codec.cache_clear()


def test_an_engine_codecs_second_instance_is_built_first_when_the_build_order_says_so(with_engine, monkeypatch):
    from conformance.benchmarks import codecs, interleaved

    engine = with_engine(fake_engine())
    made, factory = [], engine.bench_codecs["fake"]
    monkeypatch.setitem(engine.bench_codecs, "fake", lambda: made.append(factory()) or made[-1])
    monkeypatch.setattr(interleaved, "_batch", lambda call, n: 1.0)
    interleaved.measure(["fake", "fake+b"], ["control-AbortReq"], rounds=2, build_order=["fake+b", "fake"])
    # asking whether fake+b is available built it, not fake: the rotation holds for engine codecs too
    assert [m.encode for m in made] == [codecs.get_codec("fake+b").encode, codecs.get_codec("fake").encode]


def test_an_engines_bench_codecs_are_measured_between_the_fixed_ones_and_the_candidate(with_engine):
    from conformance.benchmarks import codecs
    from reference_codec.samples import flush_cache

    with_engine(fake_engine())
    assert codecs.codec_names() == ["pickle", "pickle-oob", "reference-v1", "reference-v2", "fake", "absent", "candidate"]
    assert codecs.unavailable("fake") is None
    assert codecs.unavailable("absent") == "Absent 2.0 is not installed"
    fake = codecs.get_codec("fake")
    assert fake.decode(fake.encode(fake.prepare(flush_cache()))) == flush_cache()
    with pytest.raises(ValueError, match="unknown benchmark codec 'nope'"):
        codecs.get_codec("nope")


def test_an_engine_cannot_take_the_name_of_a_fixed_codec():
    from conformance.benchmarks import codecs

    clash = dataclasses.replace(fake_engine(), bench_codecs={"pickle": lambda: None})
    with pytest.raises(ValueError, match=r"\['pickle'\]"):
        codecs.codec_names(clash)


def test_an_engines_bench_codec_is_a_column_under_its_label_and_its_target_is_judged(with_engine):
    with_engine(fake_engine())
    records = corpus_run(sglang=None) + recs(*[bench(family, "roundtrip", "fake", 1.5) for family in ("small", "medium", "big")])
    text = table.render(records)
    assert "| family | measure | pickle (baseline) | reference wire v1 | reference wire v2 | Fake 1.0 |" in text
    assert "|  | round trip | 4 s | 1 s (4.00×) | 500 ms (8.00×) | 1.5 s (2.67×) |" in text
    assert "- met: reference wire v1 round trip at least 1.2× Fake 1.0's codec at the median: 1.50× over 3 families" in text
    assert "- met: reference wire v1 round trip at least 1× Fake 1.0's codec in every family." in text
    behind = recs(*[bench(family, "roundtrip", "fake", 0.9) for family in ("small", "medium", "big")])
    lines = "\n".join(table.targets(corpus_run(sglang=None) + behind))
    assert "**MISSED**: reference wire v1 round trip at least 1× Fake 1.0's codec in every family; behind on big 0.90×" in lines
    assert "Reference wire v1 vs Fake 1.0: not measured" in "\n".join(table.targets(corpus_run(sglang=None)))
    # the default engine's codec is not this engine's: no column, no target
    assert "SGLang" not in table.render(corpus_run())


def test_an_engine_without_a_bench_target_has_no_target_lines(with_engine):
    from conformance.benchmarks import interleaved

    with_engine(fake_engine(target=None))
    records = corpus_run(sglang=None) + recs(*[bench(f, "roundtrip", "fake", 1.5) for f in ("small", "medium", "big")])
    text = table.render(records)
    assert "| Fake 1.0 |" in text and "Fake 1.0's codec" not in text and "Reference wire v1 vs" not in text
    assert interleaved.default_codecs() == ["reference-v1", "pickle"]
    assert interleaved.targets([interleaved.Row("f", "round trip", {}, {"fake": 2.0})], "reference-v1") == []


def test_interleaved_measures_an_engines_bench_codec_and_judges_its_target(with_engine):
    from conformance.benchmarks import interleaved

    with_engine(fake_engine())
    assert interleaved.default_codecs() == ["reference-v1", "fake"]
    rows = interleaved.measure(["reference-v1", "fake", "pickle"], ["control-AbortReq"], rounds=2)
    text = interleaved.render(rows, ["reference-v1", "fake", "pickle"], "cmd", 2)
    assert "| family | operation | reference-v1 | fake | pickle |" in text
    assert re.search(r"^- (met|\*\*MISSED\*\*): reference-v1 round trip at least 1\.2x fake at the corpus median", text, re.M)
    # one process: a family behind is NOT SHOWN (see the every-family tests)
    assert re.search(r"^- (met|NOT SHOWN): reference-v1 round trip at least 1x fake in every family", text, re.M)
    assert "`--processes 6` for a verdict over 1 family." in text
    assert "x pickle" not in text  # pickle is no target
    with pytest.raises(ValueError, match="cannot measure absent: Absent 2.0 is not installed"):
        interleaved.measure(["reference-v1", "absent"], ["control-AbortReq"], rounds=1)


def test_the_default_engine_declares_its_codec_as_the_bench_target_under_its_release():
    from conformance.engines import load_engine
    from conformance.engines.sglang.bench import RELEASE
    from reference_codec.schema import SCHEMA_VERSION

    engine = load_engine()
    assert engine.bench_target == "sglang" and set(engine.bench_codecs) == {"sglang", "reference-in-sglang"}
    assert engine.bench_labels["sglang"] == f"SGLang {RELEASE}" and RELEASE == SCHEMA_VERSION
    assert set(engine.bench_labels) == set(engine.bench_codecs)
