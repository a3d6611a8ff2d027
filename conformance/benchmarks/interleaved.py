"""Interleaved timing of two or more codecs: ratios that hold on a machine whose speed drifts.

pytest-benchmark times one benchmark after another, so on a shared 2-core VM
whose speed moves 2-3x over minutes, a ratio between two codecs measured a
minute apart moves with it (this repository saw 1.23x and 0.95x for the same
code). Here every *round* times each codec once, in turn, on the same message
(a batch of calls long enough to read a clock, about 4 ms), and the ratio is
taken inside the round, where both codecs saw the same machine. The order of
the codecs changes from round to round in a Williams design
(:func:`conformance.paired.round_orders`), over whole cycles of it (15
rounds asked of two codecs are 16), so that no codec runs first more often
or always right after the same other one. Each codec is timed by a loop and
a call of its own code (:func:`_own_code`): CPython specializes a call site
for the function it calls, and a loop shared by two codecs favoured one of
them. A family's ratio is the median of
its rounds' ratios; the corpus figure is the median over families, as in the
issue's targets.

``python -m conformance.benchmarks interleaved --codecs reference-v1,sglang``
prints, per family of :mod:`.corpus`, the median time of each codec and the
speed-up of the first codec over each other one (above 1: the first is faster),
then the target lines when one of the others is the default engine's
``bench_target`` (SGLang's codec, ``sglang``, for the default engine; without
``--codecs`` the command compares ``reference-v1`` with it) or the first codec
again (an A/A run: what the targets say when nothing differs). The garbage
collector stays on, as in a serving process. It measures; it gates nothing.

Rounds share a process, and a process has its own heap layout and allocator
state: on this repository's VM the same code's ratio for one family moved
between 0.95x and 1.19x from one process to another, each the median of 15
to 25 rounds. ``--processes N`` repeats the whole measurement in N fresh
interpreters, one after the other (never side by side: the machine has two
cores), and reports the median over processes of each family's ratio, with
the lowest and highest. Each process builds the codecs in its own rotation
of the named order (:func:`build_order`), so that each codec is built first
in as many processes as the others: cold, the instance built first can be
the slower one. A verdict on a target wants several processes: the
every-family target reads each family behind it over its processes' ratios
(:func:`conformance.paired.judge`): MISSED when their median's interval lies
below the target, NOT SHOWN when it holds the target (the processes cannot
tell) or when there are too few processes for an interval. The intervals
are read together, at 95% for all the families at once
(:func:`conformance.paired.joint_level`: 99.8% each over 25 families, which
takes 10 processes). Read at 95% each over 6 processes, a family where
nothing differs has all its processes below 1x with chance 1/64, so one of
25 families does in about a third of runs: a false MISSED. ``--codecs
sglang@a,sglang`` times a codec against itself (an A/A run), to see what the
verdicts say when there is nothing to find; ``--codecs sglang+b,sglang``
times two instances of it, built apart, as the two codecs of an A/B run are.

A tight loop keeps the codec's code and data in the CPU's caches, which a
serving process does not: between two messages it tokenizes, schedules and
handles HTTP. ``--evict 32MiB`` times each call alone, after copying that
many bytes (so the caches hold other data when the call starts), a few calls
per codec and round; the copy is outside the timed part. On this
repository's VM a one-request ``BatchTokenIDOutput`` round trip took about
4 µs hot and 70 µs cold, and the ratio between two codecs can differ cold
from hot. Cold, a ratio within a few percent of 1x moves from run to run
with more than the codecs: the reference inside SGLang against SGLang's
codec on the per-step messages read 0.95-0.98x named first over the 25
families, 1.00-1.04x named second, and 0.99-1.04x either way over six of
them. A cold verdict within a few percent of its target wants more than one
run, with the codecs named both ways.
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import multiprocessing
import os
import shlex
import signal
import statistics
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, cast

from ..interrupts import stop_with_parent
from ..paired import MISSED, NOT_SHOWN, joint_level, judge, round_orders, values_needed, whole_cycles
from ..provenance import header
from . import corpus
from .codecs import BASELINE, base_name, bench_target, get_codec, unavailable
from .table import V1_VS_ENGINE_FLOOR, V1_VS_ENGINE_MEDIAN, fmt_time

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "OPS",
    "Row",
    "default_codecs",
    "measure",
    "measure_in_processes",
    "build_order",
    "combine",
    "render",
    "targets",
    "processes_for_a_verdict",
    "main_interleaved",
]

#: What one call does, per operation name.
OPS = ("round trip", "encode", "decode")
#: The targets against the engine's bench target (round trip): the table's, in one place.
MEDIAN_TARGET = V1_VS_ENGINE_MEDIAN
EACH_FAMILY_TARGET = V1_VS_ENGINE_FLOOR
#: The confidence of the every-family verdict: all families' intervals together.
LEVEL = 0.95
#: Seconds one codec's batch of calls takes in a round.
BATCH_SECONDS = 0.004
#: With ``evict``: calls per codec and round, each timed alone after the caches are refilled.
COLD_CALLS = 8


@dataclass(frozen=True)
class Row:
    """One family and operation: each codec's median seconds per call, and the first codec's speed-up over each other.

    ``process_speedups`` holds, per other codec, the speed-up of each process
    combined into this row, in the order they ran, and ``spread`` their lowest
    and highest (both empty for a row of one process).
    """

    family: str
    op: str
    seconds: Dict[str, float]
    speedup: Dict[str, float]
    process_speedups: Dict[str, Tuple[float, ...]] = field(default_factory=dict)

    @property
    def spread(self) -> Dict[str, Tuple[float, float]]:
        return {name: (min(ups), max(ups)) for name, ups in self.process_speedups.items()}


def _call(codec_name: str, op: str, msg: object) -> Callable[[], object]:
    codec = get_codec(codec_name)
    obj = codec.prepare(msg)
    frames = codec.encode(obj)
    if op == "encode":
        return lambda: codec.encode(obj)
    if op == "decode":
        return lambda: codec.decode(frames)
    return lambda: codec.decode(codec.encode(obj))


def _own_code(fn: _F) -> _F:
    """A copy of function ``fn`` with a code object of its own (same name, globals, defaults and closure).

    CPython (3.11 on) specializes each call site of a code object for the
    function it last saw there, in the code object itself. A timing loop
    shared by two codecs is specialized for one and deoptimized for the
    other, and which one wins is the same in every fresh process: in an A/A
    run (one codec timed against itself, 16 rounds, 10 processes) the
    first-named copy was slower, by 1-2% on the sub-microsecond messages, in
    52 of 60 process medians; with a loop and call of its own per codec, in
    33 of 60. Each codec's timed code is therefore its own.
    """
    code = fn.__code__.replace()  # a new code object: its own inline caches
    return cast(_F, types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__))


def _batch(call: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n


def _cold_batch(call: Callable[[], object], n: int, filler: bytearray) -> float:
    """Seconds per call, each of the ``n`` calls timed alone after ``filler`` is copied (the copy is not timed)."""
    total = 0.0
    for _ in range(n):
        bytes(filler)  # other work between two messages: the caches hold its data when the call starts
        start = time.perf_counter()
        call()
        total += time.perf_counter() - start
    return total / n


def measure(
    codecs: Sequence[str],
    families: Sequence[str],
    ops: Sequence[str] = ("round trip",),
    rounds: int = 15,
    evict: int = 0,
    build_order: Optional[Sequence[str]] = None,
) -> List[Row]:
    """Time ``codecs`` on each family and operation, interleaved round by round (see the module docstring).

    ``rounds`` is rounded up to whole cycles of the design
    (:func:`conformance.paired.whole_cycles`: 16 for two codecs, 18 for
    three), so that every codec runs first equally often. ``evict`` (bytes,
    0: off) times :data:`COLD_CALLS` calls per codec and round, each after
    copying that many bytes, instead of a hot batch. ``build_order`` (the
    same names, default ``codecs``) is the order in which the codecs, each
    family's messages for them and their timing loops are built.
    """
    if evict < 0:
        raise ValueError(f"evict must be a number of bytes >= 0, got {evict}")
    filler = bytearray(evict) if evict else None
    if len(codecs) < 2:
        raise ValueError("interleaved timing needs at least two codecs: the first is compared with the others")
    twice = sorted({name for name in codecs if list(codecs).count(name) > 1})
    if twice:
        raise ValueError(f"codecs {twice} named twice: to time a codec against itself, name it NAME@TAG the second time (e.g. pickle@a,pickle), or NAME+TAG for a second instance")
    built = list(codecs if build_order is None else build_order)
    if sorted(built) != sorted(codecs):
        raise ValueError(f"build order {built} is not an order of the codecs {list(codecs)}")
    for name in built:
        why = unavailable(name)
        if why:
            raise ValueError(f"cannot measure {name}: {why}")
        get_codec(name)
    rows = []
    for family in families:
        msg = corpus.build(family)
        for op in ops:
            calls = {name: _own_code(_call(name, op, msg)) for name in built}
            gc.collect()
            # calls per batch, from one timed call of each (the slowest sets it for all: same n, same conditions)
            one = max(_batch(call, 1) for call in calls.values())
            n = max(1, int(BATCH_SECONDS / max(one, 1e-7)))
            # each codec's seconds per call in one round, timed by a loop of its own code
            timed: Dict[str, Callable[[], float]] = {
                name: functools.partial(_own_code(_batch), calls[name], n)
                if filler is None
                else functools.partial(_own_code(_cold_batch), calls[name], COLD_CALLS, filler)
                for name in built
            }
            times: Dict[str, List[float]] = {name: [] for name in codecs}
            ratios: Dict[str, List[float]] = {name: [] for name in codecs[1:]}
            for order in round_orders(list(codecs), whole_cycles(len(codecs), rounds)):
                this_round = {name: timed[name]() for name in order}
                for name, seconds in this_round.items():
                    times[name].append(seconds)
                for name in codecs[1:]:
                    ratios[name].append(this_round[name] / this_round[codecs[0]])
            rows.append(
                Row(
                    family,
                    op,
                    {name: statistics.median(v) for name, v in times.items()},
                    {name: statistics.median(v) for name, v in ratios.items()},
                )
            )
    return rows


def measure_in_processes(
    codecs: Sequence[str], families: Sequence[str], ops: Sequence[str] = ("round trip",), rounds: int = 15, processes: int = 1, evict: int = 0
) -> List[Row]:
    """:func:`measure` in ``processes`` fresh interpreters, one after the other, combined by :func:`combine`.

    Process ``i`` builds the codecs in ``codecs`` order rotated by ``i``
    (:func:`build_order`), so that each is built first in as many processes
    as the others when ``processes`` is a multiple of their number. One
    process measures in this one, as :func:`measure` does. Interrupted (Ctrl-C,
    or SIGTERM under :func:`conformance.interrupts.exit_on_sigterm`), it ends
    the measuring process before it raises; killed outright (SIGKILL), it
    cannot, and the measuring process ends itself
    (:func:`conformance.interrupts.stop_with_parent`).
    """
    if processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    if processes == 1:
        return measure(codecs, families, ops, rounds, evict)
    runs = []
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter: no heap, allocator or import state carried over
    for i in range(processes):
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=stop_with_parent) as pool:
            worker = pool.submit(os.getpid).result()  # the pool's one process, which the measurement runs in too
            try:
                runs.append(pool.submit(measure, list(codecs), list(families), list(ops), rounds, evict, build_order(codecs, i)).result())
            except BaseException:
                # Ctrl-C, or SIGTERM raising (conformance.interrupts): leaving the pool waits for the
                # task, which measures on for minutes (and beside the next run) unless ended here
                _end(worker)
                raise
    return combine(runs)


def _end(pid: int) -> None:
    """SIGTERM process ``pid`` (a pool's worker, not yet joined, so its pid is not reused); nothing if it has gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def build_order(codecs: Sequence[str], process: int) -> List[str]:
    """The order in which process number ``process`` (from 0) builds ``codecs``: their order rotated left by ``process``.

    Two instances of the same code, built one after the other in a fresh
    process, can differ cold by a few percent (the reference inside SGLang
    against a second instance of itself, one-request ``BatchTokenIDOutput``:
    the first built slower by 0.9-3.7% in 8 of 8 processes of one probe; in
    another, over three per-step messages, the first-named's speed-up 0.95-0.97x
    in the 5 processes that built it first, 0.97-1.02x in the 5 that did not).
    Built always in the named order, such a difference would fall on the same
    codec in every process.
    """
    k = process % len(codecs)
    return [*codecs[k:], *codecs[:k]]


def combine(runs: Sequence[Sequence[Row]]) -> List[Row]:
    """One row per family and operation from several processes' rows of the same measurement.

    Times and speed-ups are the medians over the processes; ``process_speedups``
    keeps every process's speed-up. The rows of every run must name the same
    families and operations in the same order.
    """
    if not runs:
        raise ValueError("nothing to combine")
    combined = []
    for group in zip(*runs, strict=True):
        first = group[0]
        if any((row.family, row.op) != (first.family, first.op) for row in group):
            raise ValueError(f"runs disagree on their rows: {[(row.family, row.op) for row in group]}")
        combined.append(
            Row(
                first.family,
                first.op,
                {name: statistics.median(row.seconds[name] for row in group) for name in first.seconds},
                {name: statistics.median(row.speedup[name] for row in group) for name in first.speedup},
                {name: tuple(row.speedup[name] for row in group) for name in first.speedup} if len(group) > 1 else {},
            )
        )
    return combined


def default_codecs() -> List[str]:
    """What the command compares without ``--codecs``: ``reference-v1`` and the engine's bench target (else pickle)."""
    return ["reference-v1", bench_target() or BASELINE]


def targets(rows: Sequence[Row], first: str, other: Optional[str] = None) -> List[str]:
    """The issue's two targets for ``first`` against ``other`` on the round trip, with the figures.

    The corpus median: met or MISSED. Every family: met, or each family behind
    read over its processes (:func:`conformance.paired.judge`) at the level
    that keeps all the families' intervals together at :data:`LEVEL`
    (:func:`conformance.paired.joint_level`: 99.8% each over 25 families), and
    the line MISSED when one of them is, NOT SHOWN when the processes cannot
    tell for any of them (too few processes for that level included).
    ``other`` defaults to the engine's bench target; nothing when there is
    none or ``rows`` do not measure it.
    """
    other = other or bench_target()
    if other is None:
        return []
    by_family = {row.family: row for row in rows if row.op == "round trip" and other in row.speedup}
    if not by_family:
        return []
    ups = {family: row.speedup[other] for family, row in by_family.items()}
    med = statistics.median(ups.values())
    median_line = (
        f"{'met' if med >= MEDIAN_TARGET else '**MISSED**'}: {first} round trip at least {MEDIAN_TARGET:g}x {other} "
        f"at the corpus median: {_times(med, MEDIAN_TARGET)} over {len(ups)} families (range {min(ups.values()):.2f}x to {max(ups.values()):.2f}x)."
    )
    behind = sorted(f for f, x in ups.items() if x < EACH_FAMILY_TARGET)
    goal = f"{first} round trip at least {EACH_FAMILY_TARGET:g}x {other} in every family"
    if not behind:
        slowest = min(ups, key=ups.__getitem__)
        return [median_line, f"met: {goal}: slowest {slowest} {ups[slowest]:.2f}x."]
    level = joint_level(LEVEL, len(ups))
    verdicts, parts = [], []
    for family in behind:
        verdict, text = _family_behind(by_family[family].process_speedups.get(other, ()), level)
        verdicts.append(verdict)
        parts.append(f"{family} {_times(ups[family], EACH_FAMILY_TARGET)}{text}")
    overall = "**MISSED**" if MISSED in verdicts else NOT_SHOWN
    joint = f"each family's interval at {_percent(level)}, so that the {len(ups)} hold together at {_percent(LEVEL)}"
    return [median_line, f"{overall}: {goal}; behind on " + ", ".join(parts) + f" ({joint})."]


def processes_for_a_verdict(families: int) -> int:
    """The fewest processes whose ratios give each of ``families`` families an interval at the every-family verdict's level (10 for 25)."""
    return values_needed(joint_level(LEVEL, families))


def _percent(level: float) -> str:
    return f"{level * 100:.4g}%"


def _times(ratio: float, target: float) -> str:
    """``ratio`` as ``1.23x``, with more decimals where two would put it on the other side of ``target`` (1.197x, not a MISSED 1.20x)."""
    return _decimals(ratio, target) + "x"


def _decimals(value: float, target: float) -> str:
    """``value`` with two decimals, or as many more (up to six) as keep it on its side of ``target``."""
    for places in range(2, 7):
        text = f"{value:.{places}f}"
        if (value < target) == (float(text) < target):
            break
    return text


def _family_behind(per_process: Sequence[float], level: float) -> Tuple[str, str]:
    """A family's median below the every-family target: its verdict over ``per_process`` at ``level`` and what to print after its ratio.

    Too few processes for an interval at ``level`` (one included) cannot tell
    a family behind from one that is not: NOT SHOWN, with the count needed.
    """
    needed = values_needed(level)
    if len(per_process) < needed:
        count = f"{len(per_process)} processes" if per_process else "one process"
        return NOT_SHOWN, f" (NOT SHOWN: {count}, too few for a {_percent(level)} interval: --processes {needed})"
    verdict, interval = judge(per_process, EACH_FAMILY_TARGET, level)
    assert interval is not None  # enough processes for one
    span = f"{_decimals(interval[0], EACH_FAMILY_TARGET)}-{_decimals(interval[1], EACH_FAMILY_TARGET)}"
    if verdict == NOT_SHOWN:
        return verdict, f" (NOT SHOWN: its {_percent(level)} interval over {len(per_process)} processes, {span}, holds {EACH_FAMILY_TARGET:g}x)"
    return verdict, f" (its {_percent(level)} interval over {len(per_process)} processes, {span}, is below {EACH_FAMILY_TARGET:g}x)"


def render(rows: Sequence[Row], codecs: Sequence[str], command: str, rounds: int, processes: int = 1, evict: int = 0) -> str:
    first, others = codecs[0], list(codecs[1:])
    each = "each round times every codec once, in turn, in a balanced order"
    if evict:
        each = (
            f"each round times every codec in turn, in a balanced order, {COLD_CALLS} calls each, "
            f"every call alone after {corpus.size_label(evict)} are copied: cold caches"
        )
    if processes == 1:
        what = f"interleaved ({rounds} rounds in one process; {each})"
        how = f"Times are medians over the rounds; (x) is {first}'s speed-up over that codec, the median of the per-round ratios (above 1: {first} is faster)."
    else:
        what = f"interleaved ({rounds} rounds in each of {processes} fresh processes; {each})"
        how = (
            f"Times are medians over the processes of each process's median; (x) is {first}'s speed-up over that codec, the median over "
            f"the processes of each process's median per-round ratio, then the lowest and highest process (above 1: {first} is faster)."
        )
    lines = [
        header(what, command).rstrip("\n"),
        "",
        how,
        "",
        "| family | operation | " + " | ".join(codecs) + " |",
        "|---|---|" + "---|" * len(codecs),
    ]
    for row in rows:
        cells = [fmt_time(row.seconds[first])] + [f"{fmt_time(row.seconds[o])} ({_speedup(row, o)})" for o in others]
        lines.append(f"| {row.family} | {row.op} | " + " | ".join(cells) + " |")
    lines.append("")
    target = bench_target()
    for other in others:
        # an A/A run reads the targets too: what they say when nothing differs
        judged = other == target or base_name(other) == base_name(first)
        for line in targets(rows, first, other) if judged else []:
            lines.append(f"- {line}")
        if judged and processes == 1:
            families = len({row.family for row in rows if row.op == "round trip"})
            lines.append(
                "- One process: a family's ratio moves between processes (see the module docstring); "
                f"`--processes {processes_for_a_verdict(max(families, 1))}` for a verdict over {families} {'family' if families == 1 else 'families'}."
            )
    return "\n".join(lines).rstrip("\n") + "\n"


def _speedup(row: Row, other: str) -> str:
    text = f"{row.speedup[other]:.2f}x"
    if other in row.spread:
        low, high = row.spread[other]
        text += f", {low:.2f}-{high:.2f}"
    return text


def main_interleaved(
    codecs: List[str], families: Optional[List[str]], ops: List[str], rounds: int, out: Optional[str], processes: int = 1, evict: int = 0
) -> int:
    """The ``interleaved`` subcommand: measure, print the table, write it to ``out``."""
    unknown = [f for f in families or [] if f not in corpus.FAMILIES]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; choose from {list(corpus.FAMILIES)}")
    bad_ops = [op for op in ops if op not in OPS]
    if bad_ops:
        raise SystemExit(f"unknown operations {bad_ops}; choose from {list(OPS)}")
    chosen = families or list(corpus.FAMILIES)
    command = "python -m conformance.benchmarks interleaved --codecs " + ",".join(codecs)
    if families:
        command += " --families " + ",".join(families)
    if ops != ["round trip"]:
        command += " --ops " + shlex.quote(",".join(ops))
    if rounds != 15:
        command += f" --rounds {rounds}"
    if processes != 1:
        command += f" --processes {processes}"
    if evict:
        command += f" --evict {corpus.size_label(evict)}"
    if out:
        command += f" --out {out}"
    try:
        rows = measure_in_processes(codecs, chosen, ops, rounds, processes, evict)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    text = render(rows, codecs, command, whole_cycles(len(codecs), rounds), processes, evict)
    print(text, end="")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {out}")
    return 0
