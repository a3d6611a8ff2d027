"""``python -m conformance.live --frontend ENGINE``: the engine's real front end per IPC mode, answers compared, optionally benchmarked.

Exit status: 0 when every answer is identical across the modes (and the
benchmark, if asked, ran), 1 on any difference, 2 when a server could not
start, a run failed (:class:`~conformance.live.frontend.FrontendRunError`) or an option is bad. ``--bench`` also writes the benchmark's report
(``--doc``), headed by the command, the commit, the machine and its load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import tempfile
from typing import Any, Dict, List, Optional

from .. import provenance
from ..paired import live_rounds
from .frontend import FIGURES, FrontendRunError, bench, bench_summary, check_identical

_SHOWN = 20


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance.live --frontend ENGINE", description=__doc__.split("\n\n")[0])
    p.add_argument("--frontend", required=True, metavar="ENGINE", help="the engine whose front end runs (its Engine.live_frontend)")
    p.add_argument("--compare", default=None, help="comma-separated IPC modes, the first the baseline (default: all the front end's)")
    p.add_argument("--requests", type=int, default=500, help="workload size (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="workload seed (default: %(default)s)")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight in the identical-answers check (default: %(default)s)")
    p.add_argument("--workdir", default=None, help="model folder, server logs, benchmark outputs (default: a temporary folder)")
    p.add_argument("--json", metavar="FILE", help="write the mismatches, counts and benchmark figures as JSON")
    p.add_argument("--bench", action="store_true", help="also run the engine's benchmark tool per mode")
    p.add_argument("--skip-check", action="store_true", help="with --bench: skip the identical-answers check")
    p.add_argument("--bench-concurrency", default="1,256", help="comma-separated concurrencies (default: %(default)s)")
    p.add_argument(
        "--repeats", type=int, default=6,
        help="benchmark rounds per concurrency, every mode once a round; more than 1 is rounded up to whole cycles of the balanced order (2 rounds for two modes, 6 for three) (default: %(default)s)",
    )
    p.add_argument(
        "--prompts", default="1:512,256:2048,1024:4096",
        help="requests per run by concurrency, C:N,...; runs of several seconds, so start-up and the tail weigh little (default: %(default)s)",
    )
    p.add_argument("--input-len", type=int, default=1024, help="benchmark input tokens (default: %(default)s)")
    p.add_argument("--output-len", type=int, default=200, help="benchmark output tokens (default: %(default)s)")
    p.add_argument("--doc", default=None, help="with --bench: write the report here (Markdown)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser()
    args = parser.parse_args(argv)
    from conformance.engines.profile import EngineSelectionError, find_engine

    try:
        engine = find_engine(args.frontend)
    except EngineSelectionError as exc:
        parser.error(str(exc))
    if engine.live_frontend is None:
        parser.error(f"engine {engine.name!r} has no live front end (Engine.live_frontend)")
    frontend = engine.live_frontend()
    modes = [m.strip() for m in (args.compare or ",".join(frontend.modes)).split(",") if m.strip()]
    unknown = [m for m in modes if m not in frontend.modes]
    if unknown or not modes:
        parser.error(f"--compare: unknown mode(s) {unknown}; {engine.name} offers {', '.join(frontend.modes)}")
    if args.requests < 1 or args.concurrency < 1 or args.repeats < 1:
        parser.error("--requests, --concurrency and --repeats must be >= 1")
    rounds = live_rounds(len(modes), args.repeats)
    if args.bench and rounds != args.repeats:
        print(f"--repeats {args.repeats} runs {rounds} rounds: whole cycles of the balanced order", flush=True)
    args.repeats = rounds  # the report's header says what ran
    try:
        concurrencies = [int(c) for c in args.bench_concurrency.split(",")]
        prompts = {int(c): int(n) for c, n in (pair.split(":") for pair in args.prompts.split(","))}
    except ValueError:
        parser.error(f"--bench-concurrency and --prompts take integers (got {args.bench_concurrency!r}, {args.prompts!r})")
    missing = [c for c in concurrencies if c not in prompts]
    if args.bench and missing:
        parser.error(f"--prompts gives no count for concurrency {missing}")

    workdir = args.workdir or tempfile.mkdtemp(prefix="live-frontend-")
    os.makedirs(workdir, exist_ok=True)
    print(f"live front end: {frontend.description}; modes {', '.join(modes)}; work in {workdir}", flush=True)
    out: Dict[str, Any] = {"frontend": engine.name, "modes": modes, "commit": provenance.commit()}  # the code that runs, taken before it runs
    status = 0
    try:
        if not args.skip_check:
            report = check_identical(frontend, modes, requests=args.requests, seed=args.seed, concurrency=args.concurrency, workdir=workdir)
            for m in report.mismatches[:_SHOWN]:
                print(f"MISMATCH {m}")
            if len(report.mismatches) > _SHOWN:
                print(f"... and {len(report.mismatches) - _SHOWN} more")
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items()))
            verdict = "identical" if report.identical else f"{len(report.mismatches)} mismatch(es)"
            print(f"{verdict}: {report.requests} requests ({kinds}) x {len(modes)} modes ({', '.join(modes)}); control: {json.dumps(report.control[modes[0]])}")
            out.update(requests=report.requests, kinds=report.kinds, control=report.control, mismatches=[m.__dict__ for m in report.mismatches])
            status = 0 if report.identical else 1
        if args.bench:
            runs = bench(
                frontend, modes, concurrencies=concurrencies, repeats=args.repeats, prompts=prompts,
                input_len=args.input_len, output_len=args.output_len, seed=args.seed, workdir=workdir,
            )
            rows = bench_summary(runs, modes)
            for row in rows:
                print(_row_line(row))
            out["bench"] = {"runs": [r.__dict__ for r in runs], "summary": rows}
            if args.doc:
                said = list(frontend.bench_verdict(runs)) if hasattr(frontend, "bench_verdict") else []
                for line in said:
                    print(line)
                _write_doc(args.doc, argv, rows, runs, args, out["commit"], frontend.description, said)
                print(f"wrote {args.doc}")
    except FrontendRunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return status


def _row_line(row: Dict[str, Any]) -> str:
    figures = ", ".join(f"{name} {row[name]:.2f} (x{row[name + '_ratio']})" for name in FIGURES if row[name] is not None)
    return f"c={row['concurrency']} {row['mode']:>10} median of {row['repeats']}: {figures}"


def _machine() -> str:
    return f"{platform.system()} {platform.release()}, {provenance.cpu()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def _write_doc(
    path: str, argv: List[str], rows: List[Dict[str, Any]], runs: List[Any], args: argparse.Namespace, commit: str, what: str, verdict: List[str]
) -> None:
    load = os.getloadavg()
    lines = [
        "# The engine's own benchmark against its own server, per IPC mode",
        "",
        f"{what}.",
        "",
        "Generated by `python -m conformance.live " + " ".join(shlex.quote(a) for a in argv) + "`; do not edit.",
        "",
        f"- commit: {commit}; written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {_machine()}; load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min)",
        f"- workload: `random-ids`, {args.input_len} input and {args.output_len} output tokens per request, "
        f"{', '.join(f'{n} requests at concurrency {c}' for c, n in sorted({r.concurrency: args_prompts(args)[r.concurrency] for r in runs}.items()))}; "
        f"{args.repeats} rounds per concurrency, each running every mode once in the order of a Williams design (every mode in every position, and after every other mode, equally often over a cycle of rounds), all servers up throughout",
        "- the model is out of the way (a scripted scheduler), so what differs between modes is the front end's and the IPC's work",
        "",
        "Ratios are to the first mode, per round, then the median over rounds (above 1: more req/s or tok/s; for TTFT, ITL and "
        "server CPU, above 1 is slower); the req/s ratio's 95% interval is distribution-free, from the rounds' order statistics "
        "(n/a: fewer than 6 rounds). Server CPU is the CPU time every process of the mode's server used during the run, "
        "per request (n/a: the front end cannot measure it).",
        "",
        "| concurrency | mode | req/s | ratio | output tok/s | ratio | mean TTFT ms | ratio | mean ITL ms | ratio | server CPU ms/request | ratio | req/s ratio 95% interval | req/s ratios per round |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = []
        for name in FIGURES:
            cells += [_cell(row[name], 2), _cell(row[name + "_ratio"], 3)]
        interval = row["request_throughput_ratio_interval"]
        cells.append("n/a" if interval is None else f"{interval[0]:.3f}-{interval[1]:.3f}")
        lines.append(f"| {row['concurrency']} | {row['mode']} | " + " | ".join(cells) + f" | {', '.join(f'{x:.3f}' for x in row['request_throughput_ratios'])} |")
    if verdict:
        lines += ["", "## What it says", ""] + [f"- {line}" for line in verdict]
    lines += [
        "",
        "Every run:",
        "",
        "| concurrency | round | mode | req/s | output tok/s | mean TTFT ms | mean ITL ms | server CPU ms/request |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        f = run.figures
        lines.append(
            f"| {run.concurrency} | {run.repeat} | {run.mode} | {_cell(f['request_throughput'], 2)} | {_cell(f['output_throughput'], 1)} "
            f"| {_cell(f['mean_ttft_ms'], 2)} | {_cell(f['mean_itl_ms'], 2)} | {_cell(f.get('server_cpu_ms'), 2)} |"
        )
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _cell(value: Optional[float], places: int) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def args_prompts(args: argparse.Namespace) -> Dict[int, int]:
    return {int(c): int(n) for c, n in (pair.split(":") for pair in args.prompts.split(","))}
