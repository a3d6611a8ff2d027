"""An engine's real serving front end, per IPC mode: identical answers, and its own benchmark tool's figures.

The engine provides the front end (``Engine.live_frontend``, a factory of an
object with the interface below); this module names no engine.

A front end offers

``modes``
    IPC modes by name; the first is the baseline.
``serve(mode, workdir)``
    A context manager: starts the engine's server in that mode, yields its
    base URL, and on exit stops it and every process it started.
``workload(n, seed)``
    ``n`` request descriptions (dicts with a ``"rid"``), the same for every mode.
``answer(url, item)``
    The answer to one request, JSON-able and normalised (ids, timestamps
    removed), so that equal behaviour gives equal answers.
``control(url)``
    The answers to the engine's control requests after the workload (JSON-able).
``bench_argv(url, concurrency=, prompts=, input_len=, output_len=, seed=, output_file=)``
    The engine's own benchmark command; it writes one JSON line with
    ``completed``, ``request_throughput``, ``output_throughput``,
    ``mean_ttft_ms``, ``mean_itl_ms`` and ``total_output_tokens_retokenized``
    (the output tokens counted again from the text the tool received:
    ``sglang.bench_serving``'s names) to ``output_file``.
``server_cpu_seconds(url)`` (optional)
    CPU seconds (user and system) used so far by every process of the server
    at ``url``. With it, each benchmark run also reports the server's CPU
    milliseconds per request (``server_cpu_ms``), read before and after the
    tool's run (the other servers idle meanwhile). Times requests per second,
    it is the cores the server kept busy: near the machine's cores (less the
    benchmark client's), the server is CPU-bound and its CPU per request moves
    with the machine's speed from round to round, as requests per second do.
``bench_verdict(runs)`` (optional)
    Lines for the report: what the engine's published figures or targets
    say, and whether these runs confirm them (:func:`paired_ratios`).

:func:`check_identical` runs the workload once per mode and lists every
answer that differs from the baseline's; :func:`bench` runs the benchmark
with every mode's server up, every mode once per round in the order of a
Williams design (:func:`~conformance.paired.round_orders`: each mode
in each position, and after each other mode, equally often), and gives
per-round ratios to the baseline, their median and its distribution-free 95%
interval (:func:`~conformance.paired.median_interval`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import statistics
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..paired import median_interval, round_orders

__all__ = ["FrontendRunError", "FrontendMismatch", "IdenticalReport", "check_identical", "BenchRun", "bench", "bench_summary", "paired_ratios", "FIGURES", "TOOL_FIGURES", "first_difference"]

class FrontendRunError(RuntimeError):
    """A mode's run could not complete: its server did not start, a request failed at the transport, the benchmark failed.

    A front end's own start-up error subclasses it; the message names the mode.
    """


#: The figures the engine's benchmark tool writes, with whether more is better.
TOOL_FIGURES = {"request_throughput": True, "output_throughput": True, "mean_ttft_ms": False, "mean_itl_ms": False}
#: Every figure compared: the tool's, then the server's CPU milliseconds per request (None where the front end cannot tell).
FIGURES = {**TOOL_FIGURES, "server_cpu_ms": False}


@dataclass(frozen=True)
class FrontendMismatch:
    """One request whose answer in ``mode`` differs from the baseline's, at ``where``."""

    rid: str
    mode: str
    where: str
    baseline: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.rid} [{self.mode}] {self.where}: baseline {self.baseline!r:.200}, got {self.got!r:.200}"


@dataclass
class IdenticalReport:
    modes: List[str]
    requests: int
    kinds: Dict[str, int]
    answers: Dict[str, List[Any]] = field(default_factory=dict)
    control: Dict[str, Any] = field(default_factory=dict)
    mismatches: List[FrontendMismatch] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.mismatches and len(self.answers) == len(self.modes)


def first_difference(a: Any, b: Any, path: str = "$") -> Optional[str]:
    """The path of the first place where ``a`` and ``b`` differ (types included: ``1`` is not ``1.0``), or None."""
    if type(a) is not type(b):
        return f"{path} (type {type(a).__name__} vs {type(b).__name__})"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k} (missing on one side)"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else path


def check_identical(frontend: Any, modes: Sequence[str], *, requests: int, seed: int, concurrency: int, workdir: str, log: Any = print) -> IdenticalReport:
    """Run the seeded workload once per mode; every answer compared with the first mode's."""
    items = frontend.workload(requests, seed)
    kinds: Dict[str, int] = {}
    for item in items:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    report = IdenticalReport(list(modes), len(items), kinds)
    for mode in modes:
        with frontend.serve(mode, workdir) as url:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                try:
                    report.answers[mode] = list(pool.map(lambda item: frontend.answer(url, item), items))
                except (OSError, http.client.HTTPException) as exc:  # the server went away (refused, reset, cut short)
                    pool.shutdown(cancel_futures=True)
                    raise FrontendRunError(f"mode {mode}: a request failed at the transport: {type(exc).__name__}: {exc}") from exc
            report.control[mode] = frontend.control(url)
        log(f"{mode}: {len(items)} answers")
    base_mode = modes[0]
    base = report.answers[base_mode]
    for mode in modes[1:]:
        for item, want, got in zip(items, base, report.answers[mode]):
            where = first_difference(want, got)
            if where:
                report.mismatches.append(FrontendMismatch(item["rid"], mode, where, want, got))
        where = first_difference(report.control[base_mode], report.control[mode])
        if where:
            report.mismatches.append(FrontendMismatch("(control requests)", mode, where, report.control[base_mode], report.control[mode]))
    return report


@dataclass(frozen=True)
class BenchRun:
    mode: str
    concurrency: int
    repeat: int
    #: every name of :data:`FIGURES`; ``server_cpu_ms`` is None when the front end has no ``server_cpu_seconds``
    figures: Dict[str, Optional[float]]


def _run_bench(frontend: Any, url: str, mode: str, concurrency: int, repeat: int, *, prompts: int, input_len: int, output_len: int, seed: int, workdir: str) -> BenchRun:
    out = os.path.join(workdir, f"bench-{mode}-c{concurrency}-r{repeat}.jsonl")
    with contextlib.suppress(FileNotFoundError):
        os.remove(out)
    argv = frontend.bench_argv(url, concurrency=concurrency, prompts=prompts, input_len=input_len, output_len=output_len, seed=seed, output_file=out)
    server_cpu = getattr(frontend, "server_cpu_seconds", None)
    cpu_before = server_cpu(url) if server_cpu else None
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    cpu_after = server_cpu(url) if server_cpu else None
    if done.returncode != 0 or not os.path.exists(out):
        raise FrontendRunError(f"the benchmark failed in mode {mode} (exit {done.returncode}): {' '.join(argv)}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    with open(out, encoding="utf-8") as fh:
        line = [row for row in fh if row.strip()][-1]
    result = json.loads(line)
    if result.get("completed") != prompts:
        raise FrontendRunError(f"the benchmark completed {result.get('completed')} of {prompts} requests in mode {mode}")
    if not result.get("mean_ttft_ms") or not result.get("total_output_tokens_retokenized"):
        # sglang.bench_serving counts a request the server refused as completed, credited with the
        # tokens it asked for (two refused requests once read as 435,882 output tok/s); only the text
        # received tells. Not a mean ITL of 0: a fast server streams each answer in one piece under load
        raise FrontendRunError(
            f"the benchmark's requests got no tokens in mode {mode} (mean TTFT {result.get('mean_ttft_ms')} ms, "
            f"{result.get('total_output_tokens_retokenized')} output tokens in the text received): the server refused them; see {out}"
        )
    figures: Dict[str, Optional[float]] = {name: float(result[name]) for name in TOOL_FIGURES}
    # the server is idle before and after the tool's run, so the difference is the run's work
    figures["server_cpu_ms"] = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000 / prompts
    return BenchRun(mode, concurrency, repeat, figures)


def bench(
    frontend: Any,
    modes: Sequence[str],
    *,
    concurrencies: Sequence[int],
    repeats: int,
    prompts: Dict[int, int],
    input_len: int,
    output_len: int,
    seed: int,
    workdir: str,
    log: Any = print,
) -> List[BenchRun]:
    """Every mode's server up at once; per concurrency, ``repeats`` rounds, each running every mode once (orders: :func:`round_orders`)."""
    runs: List[BenchRun] = []
    with contextlib.ExitStack() as stack:
        urls = {mode: stack.enter_context(frontend.serve(mode, workdir)) for mode in modes}
        for concurrency in concurrencies:
            for repeat, order in enumerate(round_orders(modes, repeats)):
                for mode in order:
                    run = _run_bench(
                        frontend, urls[mode], mode, concurrency, repeat,
                        prompts=prompts[concurrency], input_len=input_len, output_len=output_len, seed=seed + repeat, workdir=workdir,
                    )
                    runs.append(run)
                    log(f"c={concurrency} repeat {repeat} {mode}: " + ", ".join(f"{k} {v:.2f}" for k, v in run.figures.items() if v is not None))
    return runs


def paired_ratios(runs: Sequence[BenchRun], mode: str, base: str, concurrency: int, figure: str) -> List[float]:
    """``figure`` of ``mode`` over ``base``'s, round by round (rounds where both ran and have the figure), at ``concurrency``."""
    by_round = {(r.mode, r.repeat): r.figures.get(figure) for r in runs if r.concurrency == concurrency}
    rounds = sorted({rep for (m, rep) in by_round if m == mode} & {rep for (m, rep) in by_round if m == base})
    pairs = [(by_round[(mode, rep)], by_round[(base, rep)]) for rep in rounds]
    return [value / base_value for value, base_value in pairs if value is not None and base_value]


def bench_summary(runs: Sequence[BenchRun], modes: Sequence[str]) -> List[Dict[str, Any]]:
    """Per concurrency and mode: each figure's median, and its per-round ratios to the first mode with their median and its 95% interval (None: too few rounds)."""
    rows = []
    base_mode = modes[0]
    for concurrency in sorted({r.concurrency for r in runs}):
        by_mode = {m: {r.repeat: r for r in runs if r.concurrency == concurrency and r.mode == m} for m in modes}
        for mode in modes:
            row: Dict[str, Any] = {"concurrency": concurrency, "mode": mode, "repeats": len(by_mode[mode])}
            for name in FIGURES:
                values = [v for v in (r.figures.get(name) for r in by_mode[mode].values()) if v is not None]
                row[name] = statistics.median(values) if values else None
                ratios = paired_ratios(runs, mode, base_mode, concurrency, name)
                row[f"{name}_ratios"] = [round(x, 4) for x in ratios]
                row[f"{name}_ratio"] = round(statistics.median(ratios), 4) if ratios else None
                interval = median_interval(ratios)
                row[f"{name}_ratio_interval"] = None if interval is None else [round(x, 4) for x in interval]
            rows.append(row)
    return rows
