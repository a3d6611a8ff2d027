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

Confirmation pass. Each run's IQR only covers the noise *within* that run; a
machine whose load changes *between* the baseline run and the current run
(another job starts, a core is taken) shifts every median of one run and can
flag a benchmark whose code did not change. So the first comparison only
*flags*; ``run`` then re-measures just the flagged benchmarks, plus pickle's
benchmark of the same family and measure as a same-run yardstick, in short
pytest-benchmark runs (``-k`` selecting them) alternating between the two
trees: base, current, then current, base, then base, current (``--confirm-runs``
alternations, default 3; the order flips each time so that a steady drift of
the load does not always fall on one side). Each alternation is compared
with the same rule as above (its own IQRs), and additionally as a ratio to
the yardstick in the same run when the yardstick was measured (a slowdown
that pickle shows too in that run is the machine, not the codec). A flagged
benchmark is a *confirmed* regression when it regressed in a strict majority
of the alternations that measured it (and when none measured it: it stays a
regression); otherwise it is *cleared as noise*. The decision,
:func:`confirm`, is a pure function of the measurements. With a baseline JSON
and no git ref (``--baseline``/``BENCH_BASELINE``), the base cannot be
re-measured: only this tree is, and the regression must persist against the
same baseline JSON in the majority of the re-measurements (this cannot clear
a machine that stayed slower since the baseline was recorded; the output says
so). Memory regressions are never re-measured (memory does not depend on load).
The ``gate`` subcommand compares two files and has no confirmation pass.

How an engine's CI uses it (one job, one machine)::

    # recommended, both in one: measure the base commit's codec with this commit's benchmarks
    # in a temporary git worktree, then this commit, gate, and confirm flagged benchmarks by
    # re-measuring both trees interleaved (exit status 1 only on a confirmed regression)
    python -m conformance.benchmarks run --out-dir reports --baseline-ref origin/main [--confirm-runs 3]
    # or with tox:     BENCH_BASELINE_REF=origin/main tox -e bench
    # or in two steps (the confirmation pass then re-measures this commit only):
    python -m conformance.benchmarks baseline --ref origin/main --out reports/bench-baseline.json
    python -m conformance.benchmarks run --out-dir reports --baseline reports/bench-baseline.json

or gate two JSON files from anywhere (no confirmation pass)::

    python -m conformance.benchmarks gate BASELINE.json CURRENT.json [--threshold 0.1] [--normalize pickle]

Exit status of ``run`` and ``gate``: 1 on a (confirmed) regression, 2 when no
benchmark could be compared, 0 otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .results import Record
from .table import fmt_time

__all__ = [
    "GateRow", "GateResult", "compare", "format_result", "DEFAULT_CODECS",
    "ConfirmRow", "ConfirmResult", "flagged", "confirmation_selection", "k_expression", "confirm",
    "format_confirmation", "exit_status",
]

DEFAULT_CODECS: Tuple[str, ...] = ("reference-v1", "reference-v2")
DEFAULT_THRESHOLD = 0.10
DEFAULT_IQR_FACTOR = 2.0
DEFAULT_MAX_THRESHOLD = 1.0
DEFAULT_MEMORY_TOLERANCE = 0.10
DEFAULT_CONFIRM_RUNS = 3
YARDSTICK = "pickle"


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


def format_result(result: GateResult, *, show_all: bool = False, final: bool = True) -> str:
    """A markdown table (regressions first; every row with ``show_all``) and the verdict line.

    ``final=False``: the first comparison of a run whose flagged benchmarks are
    re-measured next; its last line says so instead of a gate verdict.
    """
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
    elif not final:
        verdict = (
            f"first comparison: {len(result.compared)} compared, {len(result.regressions)} flagged, "
            f"{n_fast} faster, {n_ok} within noise; not a verdict yet, the flagged times are re-measured"
        )
    else:
        verdict = (
            f"BENCHMARK GATE {'PASSED' if result.passed else 'FAILED'}: {len(result.compared)} compared, "
            f"{len(result.regressions)} regressed, {n_fast} faster, {n_ok} within noise"
        )
    if len(lines) == 2:
        lines = ["(every gated benchmark within its allowance)"]
    return "\n".join(lines + ["", verdict]) + "\n"


# --- confirmation pass ----------------------------------------------------------


def flagged(result: GateResult) -> List[GateRow]:
    """The time regressions of a first comparison: the benchmarks the confirmation pass re-measures."""
    return [r for r in result.regressions if r.kind != "memory"]


def confirmation_selection(rows: Sequence[GateRow], current: Sequence[Record], yardstick: Optional[str] = YARDSTICK) -> List[str]:
    """Names to re-measure: the flagged benchmarks and, per flagged family and measure, ``yardstick``'s."""
    names = [r.name for r in rows]
    if yardstick:
        keyed = _keyed(current)
        for r in rows:
            ref = keyed.get((r.family, r.op, yardstick))
            if ref is not None and ref.name not in names:
                names.append(ref.name)
    return names


_K_IDENT = re.compile(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+\Z")


def k_expression(names: Sequence[str]) -> Tuple[str, List[str]]:
    """A pytest ``-k`` expression selecting exactly these benchmarks, and the names it cannot select.

    ``-k`` matches a substring of the test's name (``test_codec[tensor-1KiB-pickle-encode]``,
    the last part of the full name), case-insensitively; brackets make it exact.
    """
    parts, unselectable = [], []
    for name in names:
        last = name.rsplit("::", 1)[-1]
        if _K_IDENT.match(last) and last.lower() not in ("and", "or", "not"):
            parts.append(last)
        else:
            unselectable.append(name)
    return " or ".join(dict.fromkeys(parts)), unselectable


@dataclasses.dataclass(frozen=True)
class ConfirmRow:
    """One flagged benchmark across the alternations of the confirmation pass (``None``: not measured)."""

    name: str
    codec: str
    family: str
    op: str
    first_change: Optional[float]  #: the change the first comparison flagged
    changes: Tuple[Optional[float], ...]  #: current / base - 1 per alternation (the gate's measure)
    vs_yardstick: Tuple[Optional[float], ...]  #: the same as ratios to the yardstick in the same run
    allowed: Tuple[Optional[float], ...]
    regressed: Tuple[Optional[bool], ...]
    verdict: str  #: "confirmed", "noise" or "unmeasured" (re-measurement missing: stays a regression)

    @property
    def votes(self) -> Tuple[int, int]:
        """(alternations regressed, alternations measured)."""
        measured = [r for r in self.regressed if r is not None]
        return sum(measured), len(measured)


@dataclasses.dataclass(frozen=True)
class ConfirmResult:
    rows: List[ConfirmRow]
    base_remeasured: bool  #: False: only this tree was re-measured, against the same baseline JSON
    yardstick: Optional[str] = YARDSTICK

    @property
    def confirmed(self) -> List[ConfirmRow]:
        return [r for r in self.rows if r.verdict != "noise"]

    @property
    def cleared(self) -> List[ConfirmRow]:
        return [r for r in self.rows if r.verdict == "noise"]


def confirm(
    flagged_rows: Sequence[GateRow],
    trials: Sequence[Tuple[Sequence[Record], Sequence[Record]]],
    *,
    base_remeasured: bool = True,
    threshold: float = DEFAULT_THRESHOLD,
    iqr_factor: float = DEFAULT_IQR_FACTOR,
    max_threshold: float = DEFAULT_MAX_THRESHOLD,
    normalize: Optional[str] = None,
    yardstick: Optional[str] = YARDSTICK,
) -> ConfirmResult:
    """Decide, from re-measurements only, which flagged benchmarks really regressed.

    ``trials`` holds one ``(base records, current records)`` pair per
    alternation (the same baseline records every time when the base could not
    be re-measured). In an alternation a benchmark regressed when
    :func:`compare` (same thresholds, ``normalize``) calls it a regression
    and, when ``yardstick``'s benchmark of the same family and measure is in
    both runs of that alternation, it also regressed as a ratio to the
    yardstick. Verdict: "confirmed" when it regressed in a strict majority of
    the alternations that measured it, "unmeasured" when none did (it stays a
    regression), "noise" otherwise. Pure: no measurement, no I/O.
    """
    per_trial = []
    for base, cur in trials:

        def rows_by_name(by: Optional[str]) -> Dict[str, GateRow]:
            report = compare(base, cur, normalize=by, threshold=threshold, iqr_factor=iqr_factor, max_threshold=max_threshold, codecs=None)
            return {r.name: r for r in report.rows}

        main = rows_by_name(normalize)
        yard: Dict[str, GateRow] = rows_by_name(yardstick) if yardstick and yardstick != normalize else {}
        per_trial.append((main, yard))
    rows = []
    for f in flagged_rows:
        changes: List[Optional[float]] = []
        vs_yard: List[Optional[float]] = []
        allowed: List[Optional[float]] = []
        regressed: List[Optional[bool]] = []
        for main, yard in per_trial:
            m = main.get(f.name)
            if m is None or m.verdict not in ("ok", "REGRESSION", "faster"):
                for column in (changes, vs_yard, allowed, regressed):
                    column.append(None)
                continue
            y = yard.get(f.name)
            if y is not None and y.verdict not in ("ok", "REGRESSION", "faster"):
                y = None  # the yardstick was not measured in this alternation
            changes.append(m.change)
            allowed.append(m.allowed)
            vs_yard.append(y.change if y is not None else None)
            regressed.append(m.verdict == "REGRESSION" and (y is None or y.verdict == "REGRESSION"))
        votes = [r for r in regressed if r is not None]
        if not votes:
            verdict = "unmeasured"
        elif 2 * sum(votes) > len(votes):
            verdict = "confirmed"
        else:
            verdict = "noise"
        rows.append(
            ConfirmRow(f.name, f.codec, f.family, f.op, f.change, tuple(changes), tuple(vs_yard), tuple(allowed), tuple(regressed), verdict)
        )
    return ConfirmResult(rows, base_remeasured, yardstick if yardstick != normalize else None)


def _pct(values: Sequence[Optional[float]]) -> str:
    return ", ".join("–" if v is None else f"{v:+.0%}" for v in values) or "–"


def format_confirmation(result: ConfirmResult, first: GateResult) -> str:
    """What was flagged, re-measured, confirmed or cleared, and the gate's final verdict line."""
    n = max((len(r.changes) for r in result.rows), default=0)
    if result.base_remeasured:
        how = (
            f"re-measured in both trees, interleaved ({n} alternations of base and current, "
            "the order flipping each time)"
        )
    else:
        how = (
            f"re-measured {n} times in this tree only: a baseline JSON without a git ref cannot be "
            "re-measured, so a regression is confirmed when it persists against the same baseline JSON "
            "(this cannot tell a machine that stayed slower since the baseline from a regression)"
        )
    yard = f"; {result.yardstick} of the same family and measure measured alongside as a same-run yardstick" if result.yardstick else ""
    lines = [
        f"Confirmation pass: {len(result.rows)} flagged time(s) {how}{yard}.",
        "A flagged benchmark is confirmed when it regresses in a strict majority of the alternations"
        + (f" (both in time and as a ratio to {result.yardstick} when measured)" if result.yardstick else "")
        + ", else cleared as noise.",
        "",
        f"| verdict | benchmark | first comparison | change per alternation | vs {result.yardstick or '–'} per alternation | allowed | regressed in |",
        "|---|---|---|---|---|---|---|",
    ]
    order = {"confirmed": 0, "unmeasured": 1, "noise": 2}
    for r in sorted(result.rows, key=lambda r: (order[r.verdict], r.name)):
        votes, measured = r.votes
        label = {"confirmed": "CONFIRMED", "unmeasured": "NOT RE-MEASURED (kept)", "noise": "cleared (noise)"}[r.verdict]
        first_change = "–" if r.first_change is None else f"{r.first_change:+.1%}"
        lines.append(
            f"| {label} | {r.family} {r.op} {r.codec} | {first_change} | {_pct(r.changes)} | "
            f"{_pct(r.vs_yardstick) if result.yardstick else '–'} | {_pct(r.allowed).replace('+', '')} | {votes}/{measured} |"
        )
    memory = [r for r in first.regressions if r.kind == "memory"]
    if memory:
        lines += ["", f"{len(memory)} memory regression(s) not re-measured (memory does not depend on load): "
                  + ", ".join(f"{r.family} {r.codec}" for r in memory)]
    regressed = len(result.confirmed) + len(memory)
    status = "PASSED" if regressed == 0 else "FAILED"
    lines += [
        "",
        f"BENCHMARK GATE {status}: {len(first.compared)} compared, {regressed} regressed "
        f"({len(result.confirmed)} confirmed by re-measurement, {len(memory)} memory), "
        f"{len(result.cleared)} flagged then cleared as noise",
    ]
    return "\n".join(lines) + "\n"


def exit_status(first: GateResult, confirmation: Optional[ConfirmResult] = None) -> int:
    """2 when nothing was compared, 1 on a regression (confirmed, when a confirmation pass ran), else 0."""
    if not first.compared:
        return 2
    if confirmation is None:
        return 0 if first.passed else 1
    memory = [r for r in first.regressions if r.kind == "memory"]
    return 1 if confirmation.confirmed or memory else 0
