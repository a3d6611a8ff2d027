"""Regression gate: compare a current benchmark run with a baseline run of the same machine and job.

A benchmark regressed when its current median exceeds the baseline median by
more than its allowed change::

    allowed = min(max_threshold, max(threshold, iqr_factor * max(rel_iqr(baseline), rel_iqr(current))))
    regression  <=>  current_median > baseline_median * (1 + allowed)

``rel_iqr`` is a run's own interquartile range over its median: a benchmark
that is noisy on this machine gets a wider allowance, derived from both runs,
instead of a fixed percentage that either trips on noise or sleeps through
real regressions; ``max_threshold`` keeps a very noisy benchmark gateable
(a 2x slowdown always trips with the default 1.0). Medians, never means.

Only the codecs a change can affect are gated (default: the reference, wire
v1 and v2); pickle and SGLang are measured to compute ratios and would only
gate the machine. ``normalize="pickle"`` compares each time as a ratio to
pickle's time for the same family and measure *in the same run*, which
cancels a machine that is uniformly slower during one of the two runs (the
spread then combines both benchmarks' spreads). Memory (decode peak /
payload) is gated by absolute change (``memory_tolerance``), since it does
not depend on load. Probe and live-pipeline times are never gated.

How an engine's CI uses it (one job, one machine)::

    # 1. baseline: the base commit's codec, measured with this commit's corpus
    python -m conformance.benchmarks baseline --ref origin/main --out reports/bench-baseline.json
    # 2. this commit, then gate (exit status 1 on a regression)
    python -m conformance.benchmarks run --out-dir reports --baseline reports/bench-baseline.json
    # or both in one: python -m conformance.benchmarks run --baseline-ref origin/main
    # or with tox:     BENCH_BASELINE_REF=origin/main tox -e bench

or gate two JSON files from anywhere::

    python -m conformance.benchmarks gate BASELINE.json CURRENT.json [--threshold 0.1] [--normalize pickle]
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .results import Record
from .table import fmt_time

__all__ = ["GateRow", "GateResult", "compare", "format_result", "DEFAULT_CODECS"]

DEFAULT_CODECS: Tuple[str, ...] = ("reference-v1", "reference-v2")
DEFAULT_THRESHOLD = 0.10
DEFAULT_IQR_FACTOR = 2.0
DEFAULT_MAX_THRESHOLD = 1.0
DEFAULT_MEMORY_TOLERANCE = 0.10


@dataclasses.dataclass(frozen=True)
class GateRow:
    name: str
    codec: str
    family: str
    op: str
    baseline: Optional[float]
    current: Optional[float]
    allowed: Optional[float]  #: relative (times) or absolute (memory ratio) allowance
    verdict: str  #: "ok", "REGRESSION", "faster", "new", "missing"
    kind: str = "time"  #: "time", "time/pickle" or "memory"

    @property
    def change(self) -> Optional[float]:
        if self.baseline is None or self.current is None:
            return None
        if self.kind == "memory":
            return self.current - self.baseline
        return self.current / self.baseline - 1 if self.baseline > 0 else math.inf


@dataclasses.dataclass(frozen=True)
class GateResult:
    rows: List[GateRow]

    @property
    def regressions(self) -> List[GateRow]:
        return [r for r in self.rows if r.verdict == "REGRESSION"]

    @property
    def compared(self) -> List[GateRow]:
        return [r for r in self.rows if r.verdict in ("ok", "REGRESSION", "faster")]

    @property
    def passed(self) -> bool:
        return bool(self.compared) and not self.regressions


def _value(r: Record, by_key: Dict[Tuple[str, str, str], Record], normalize: Optional[str]) -> Optional[Tuple[float, float]]:
    """(value, relative spread) of a timing record, optionally as a ratio to ``normalize``'s time."""
    if normalize is None:
        return r.median, r.rel_iqr
    ref = by_key.get((r.family, r.op, normalize))
    if ref is None or ref.median <= 0:
        return None
    return r.median / ref.median, math.hypot(r.rel_iqr, ref.rel_iqr)


def _keyed(records: Iterable[Record]) -> Dict[Tuple[str, str, str], Record]:
    return {(r.family, r.op, r.codec): r for r in records}


def compare(
    baseline: Sequence[Record],
    current: Sequence[Record],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    iqr_factor: float = DEFAULT_IQR_FACTOR,
    max_threshold: float = DEFAULT_MAX_THRESHOLD,
    codecs: Optional[Sequence[str]] = DEFAULT_CODECS,
    normalize: Optional[str] = None,
    memory_tolerance: float = DEFAULT_MEMORY_TOLERANCE,
) -> GateResult:
    """Compare ``current`` with ``baseline`` benchmark by benchmark (matched by full name).

    ``codecs=None`` gates every codec. See the module docstring for the rule.
    """
    if threshold < 0 or iqr_factor < 0 or max_threshold < threshold:
        raise ValueError(
            f"need threshold >= 0, iqr_factor >= 0 and max_threshold >= threshold; "
            f"got {threshold}, {iqr_factor}, {max_threshold}"
        )
    base_by_name = {r.name: r for r in baseline}
    cur_by_name = {r.name: r for r in current}
    base_keyed, cur_keyed = _keyed(baseline), _keyed(current)
    rows: List[GateRow] = []

    def gated(r: Record) -> bool:
        return codecs is None or r.codec in codecs

    for name, cur in cur_by_name.items():
        if not gated(cur):
            continue
        base = base_by_name.get(name)
        if cur.op == "memory":
            c, b = cur.extra.get("peak_ratio"), base.extra.get("peak_ratio") if base is not None else None
            if c is None:
                continue
            if b is None:
                rows.append(GateRow(name, cur.codec, cur.family, cur.op, None, c, None, "new", "memory"))
                continue
            verdict = "REGRESSION" if c > b + memory_tolerance else "faster" if c < b - memory_tolerance else "ok"
            rows.append(GateRow(name, cur.codec, cur.family, cur.op, b, c, memory_tolerance, verdict, "memory"))
            continue
        if not cur.gate_time:
            continue
        kind = "time" if normalize is None else f"time/{normalize}"
        if base is None or not base.gate_time:
            rows.append(GateRow(name, cur.codec, cur.family, cur.op, None, cur.median, None, "new", kind))
            continue
        cv, bv = _value(cur, cur_keyed, normalize), _value(base, base_keyed, normalize)
        if cv is None or bv is None:
            rows.append(GateRow(name, cur.codec, cur.family, cur.op, None, cur.median, None, "new", kind))
            continue
        allowed = min(max_threshold, max(threshold, iqr_factor * max(cv[1], bv[1])))
        if cv[0] > bv[0] * (1 + allowed):
            verdict = "REGRESSION"
        elif cv[0] * (1 + allowed) < bv[0]:
            verdict = "faster"
        else:
            verdict = "ok"
        rows.append(GateRow(name, cur.codec, cur.family, cur.op, bv[0], cv[0], allowed, verdict, kind))
    for name, base in base_by_name.items():
        if name not in cur_by_name and gated(base) and (base.gate_time or base.op == "memory"):
            rows.append(GateRow(name, base.codec, base.family, base.op, base.median, None, None, "missing"))
    return GateResult(rows)


def _fmt(value: Optional[float], kind: str) -> str:
    if value is None:
        return "–"
    if kind == "memory":
        return f"{value:.2f}"
    if kind.startswith("time/"):
        return f"{value:.3f}"
    return fmt_time(value)


def format_result(result: GateResult, *, show_all: bool = False) -> str:
    """A markdown table (regressions first; every row with ``show_all``) and the verdict line."""
    order = {"REGRESSION": 0, "faster": 1, "missing": 2, "new": 3, "ok": 4}
    rows = sorted(result.rows, key=lambda r: (order[r.verdict], -(r.change or 0)))
    if not show_all:
        rows = [r for r in rows if r.verdict != "ok"]
    lines = ["| verdict | benchmark | baseline | current | change | allowed |", "|---|---|---|---|---|---|"]
    for r in rows:
        change = r.change
        if change is None:
            change_text = "–"
        elif r.kind == "memory":
            change_text = f"{change:+.2f}"
        else:
            change_text = f"{change:+.1%}"
        allowed = "–" if r.allowed is None else (f"±{r.allowed:.2f}" if r.kind == "memory" else f"{r.allowed:.0%}")
        lines.append(
            f"| {r.verdict} | {r.family} {r.op} {r.codec} | {_fmt(r.baseline, r.kind)} | "
            f"{_fmt(r.current, r.kind)} | {change_text} | {allowed} |"
        )
    n_ok = sum(r.verdict == "ok" for r in result.rows)
    n_fast = sum(r.verdict == "faster" for r in result.rows)
    if not result.compared:
        verdict = "BENCHMARK GATE FAILED: no benchmark in common between the baseline and this run"
    else:
        verdict = (
            f"BENCHMARK GATE {'PASSED' if result.passed else 'FAILED'}: {len(result.compared)} compared, "
            f"{len(result.regressions)} regressed, {n_fast} faster, {n_ok} within noise"
        )
    if len(lines) == 2:
        lines = ["(every gated benchmark within its allowance)"]
    return "\n".join(lines + ["", verdict]) + "\n"
