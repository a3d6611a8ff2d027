"""``python -m conformance.live``: run one workload through the pipeline once per codec and compare.

Exit status: 0 when every request's answers are identical across the codecs
(each compared with the first), 1 on any mismatch or when a codec's run
failed (a process died, answers never came), 2 when the baseline itself
could not run or an option is bad.

``--frontend ENGINE`` runs the engine's real serving front end instead
(:mod:`conformance.live.frontend_main`; ``--frontend sglang --help``).

``--ipc-bound`` takes the model out of the way (the scheduler reads its
outputs from precomputed tables, :mod:`conformance.live.precomputed`), so the
time left is IPC; with ``--workload decode-heavy --concurrency 256
--repeats 4`` it is the seed's throughput experiment in miniature. Each repeat
runs every codec once, in the balanced orders of
:func:`~conformance.paired.round_orders` (pickle, reference; reference,
pickle; ...), so drift of the machine and a codec's place in the repeat fall
on all alike (more than one repeat is rounded up to whole cycles of those
orders, so each codec runs first equally often); the summary gives each
codec's median over its repeats and its ratio to the first codec (the median
of the per-repeat ratios, with its 95% interval from 6 repeats on).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
from typing import Any, Dict, List, Optional

from ..interrupts import exit_on_sigterm
from ..paired import live_rounds, median_interval, round_orders
from .compare import compare_results
from .pipeline import PipelineError, PipelineResult, default_device, run_pipeline
from .workload import WORKLOADS

_SHOWN = 20


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(a == "--frontend" or a.startswith("--frontend=") for a in argv):
        # an engine's real front end instead of this project's pipeline: its own options
        from .frontend_main import main as frontend_main

        return frontend_main(argv)
    parser = argparse.ArgumentParser(prog="python -m conformance.live", description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", default="pickle,reference", help="comma-separated codec specs; the first is the baseline (default: %(default)s)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="mixed", help="the request stream (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=32, help="workload size (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default: %(default)s)")
    parser.add_argument("--model-seed", type=int, default=0, help="model weight (or table) seed (default: %(default)s)")
    parser.add_argument("--device", default=None, help="scheduler device (default: cuda when available, else cpu)")
    parser.add_argument("--concurrency", type=int, default=8, help="most requests in flight (default: %(default)s)")
    parser.add_argument("--ipc-bound", action="store_true", help="precomputed model outputs instead of the model, so the time is IPC")
    parser.add_argument("--repeats", type=int, default=1, help="runs per codec, every codec once a repeat in balanced orders; more than 1 is rounded up to whole cycles of the order (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed for the answers of one run")
    parser.add_argument("--json", metavar="FILE", help="write the figures and mismatches as JSON")
    args = parser.parse_args(argv)

    codecs = [c.strip() for c in args.compare.split(",") if c.strip()]
    if not codecs:
        parser.error("--compare needs at least one codec")
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    args.repeats = live_rounds(len(codecs), args.repeats)
    device = args.device or default_device()
    workload = WORKLOADS[args.workload](args.requests, args.seed)
    mode = ", ipc-bound (precomputed model outputs)" if args.ipc_bound else ""
    print(
        f"live pipeline: {args.workload} workload, {args.requests} work items (seed {args.seed}), device {device}, "
        f"concurrency {args.concurrency}, {args.repeats} repeat(s){mode}"
    )
    runs: Dict[str, List[PipelineResult]] = {c: [] for c in codecs}
    failures: List[str] = []
    try:
        outcome = _run_repeats(args, codecs, workload, device, runs, failures)
    finally:
        gc.unfreeze()
    if outcome is not None:
        return outcome

    baseline = runs[codecs[0]][0]
    others = [r for c in codecs for r in runs[c] if r is not baseline]
    mismatches = [m for other in others for m in compare_results(baseline, other, workload)]
    for m in mismatches[:_SHOWN]:
        print(f"MISMATCH {m}")
    if len(mismatches) > _SHOWN:
        print(f"... and {len(mismatches) - _SHOWN} more")
    summary = summarize(runs, codecs[0])
    if args.repeats > 1 or len(codecs) > 1:
        for row in summary:
            print(row_line(row))
    if others:
        verdict = "identical" if not (mismatches or failures) else f"{len(mismatches)} mismatch(es), {len(failures)} failed run(s)"
        print(f"{verdict}: {len(baseline.outputs)} requests x {1 + len(others)} runs ({', '.join(codecs)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "workload": args.workload,
                    "requests": args.requests,
                    "seed": args.seed,
                    "device": device,
                    "concurrency": args.concurrency,
                    "ipc_bound": args.ipc_bound,
                    "repeats": args.repeats,
                    "runs": [r.summary() for c in codecs for r in runs[c]],
                    "summary": summary,
                    "mismatches": [str(m) for m in mismatches],
                    "failed_runs": failures,
                },
                f,
                indent=2,
            )
    return 1 if (mismatches or failures) else 0


def _run_repeats(
    args: argparse.Namespace, codecs: List[str], workload: List[Any], device: str, runs: Dict[str, List[PipelineResult]], failures: List[str]
) -> Optional[int]:
    """Run every codec ``args.repeats`` times, once a repeat (orders: :func:`round_orders`); an exit status when the baseline could not run, else None."""
    for order in round_orders(codecs, args.repeats):
        for codec in order:
            # The client runs in this process, which keeps every earlier run's answers for the
            # comparison: frozen, they are not traversed by the client's collections, so a later
            # run does not pay for the answers of the runs before it.
            gc.collect()
            gc.freeze()
            try:
                result = run_pipeline(
                    codec,
                    workload,
                    device=device,
                    concurrency=args.concurrency,
                    model_seed=args.model_seed,
                    ipc_bound=args.ipc_bound,
                    timeout_s=args.timeout,
                )
            except (PipelineError, ValueError) as exc:
                print(f"FAILED {codec}: {exc}", flush=True)
                failures.append(f"{codec}: {exc}")
                if codec == codecs[0] and not runs[codec]:  # the first repeat runs the baseline first
                    print("error: the baseline did not run; nothing to compare against", file=sys.stderr)
                    return 2
                continue
            print(result.line(), flush=True)
            runs[codec].append(result)
    return None


def summarize(runs: Dict[str, List[PipelineResult]], baseline: str) -> List[Dict[str, Any]]:
    """Per codec: the median of its runs' req/s, tok/s and mean ITL, and its ratios to ``baseline``.

    A ratio is the median over repeats of the codec's run divided by the
    baseline's run of the same repeat: repeats alternate, so a pair saw the same
    machine, and a machine that slows down halfway moves both runs of a pair
    (a ratio of the two medians can then pair a fast run with a slow one). It
    is None unless both codecs completed every repeat; ``ratio_requests_per_s_interval``
    is its 95% interval (:func:`median_interval`; None below 6 repeats).
    """
    base = runs.get(baseline) or []
    rows = []
    for codec, results in runs.items():
        if not results:
            continue
        itls = [r.mean_itl_s for r in results if r.mean_itl_s is not None]
        requests_per_s = _paired_ratios(results, base, "requests_per_s")
        rows.append(
            {
                "codec": results[0].codec,
                "codec_spec": codec,
                "runs": len(results),
                "requests_per_s": round(statistics.median(r.requests_per_s for r in results), 3),
                "tokens_per_s": round(statistics.median(r.tokens_per_s for r in results), 3),
                "mean_itl_ms": round(statistics.median(itls) * 1e3, 4) if itls else None,
                "requests_per_s_all": [round(r.requests_per_s, 3) for r in results],
                "ratio_requests_per_s": _median(requests_per_s),
                "ratio_requests_per_s_interval": _interval(requests_per_s),
                "ratio_tokens_per_s": _median(_paired_ratios(results, base, "tokens_per_s")),
                "ipc_cpu_s": round(statistics.median(r.ipc_cpu_s for r in results), 4),
                "cpu_s": round(statistics.median(r.cpu_s for r in results), 4),
                "ratio_ipc_cpu_s": _median(_paired_ratios(results, base, "ipc_cpu_s")),
            }
        )
    return rows


def _paired_ratios(results: List[PipelineResult], base: List[PipelineResult], figure: str) -> List[float]:
    """``figure`` of each repeat's run over the baseline's; empty unless both ran every repeat."""
    if not base or len(results) != len(base):
        return []
    return [getattr(r, figure) / getattr(b, figure) for r, b in zip(results, base) if getattr(b, figure)]


def _median(ratios: List[float]) -> Optional[float]:
    return round(statistics.median(ratios), 4) if ratios else None


def _interval(ratios: List[float]) -> Optional[List[float]]:
    interval = median_interval(ratios)
    return None if interval is None else [round(x, 4) for x in interval]


def row_line(row: Dict[str, Any]) -> str:
    itl = "n/a" if row["mean_itl_ms"] is None else f"{row['mean_itl_ms']:.2f} ms"
    runs = ", ".join(f"{x:.1f}" for x in row["requests_per_s_all"])
    return (
        f"median of {row['runs']}: {row['codec']:>12} {row['requests_per_s']:.1f} req/s ({runs}), "
        f"{row['tokens_per_s']:.1f} tok/s, mean ITL {itl}; {_times(row['ratio_requests_per_s'])} req/s, "
        f"{_times(row['ratio_tokens_per_s'])} tok/s of the first codec (median of per-repeat ratios{_within(row['ratio_requests_per_s_interval'])}); "
        f"CPU in IPC {row['ipc_cpu_s']:.3f} s ({_times(row['ratio_ipc_cpu_s'])} the first codec's) of {row['cpu_s']:.3f} s"
    )


def _within(interval: Optional[List[float]]) -> str:
    return "" if interval is None else f"; req/s 95% interval x{interval[0]:.3f}-x{interval[1]:.3f}"


def _times(ratio: Optional[float]) -> str:
    return "n/a" if ratio is None else f"x{ratio:.3f}"


if __name__ == "__main__":
    exit_on_sigterm()  # a CI timeout or kill unwinds like Ctrl-C: every process and server started is stopped on the way out
    sys.exit(main())
