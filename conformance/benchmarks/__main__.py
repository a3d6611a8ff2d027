"""``python -m conformance.benchmarks``: run the benchmarks, make the README table, gate a change.

Subcommands::

    run       [--out-dir reports] [--full] [--baseline JSON | --baseline-ref REF] [--confirm-runs 3]
              [gate options] [-- pytest args]
    report    RESULTS.json [--out FILE] [--command TEXT]
    gate      BASELINE.json CURRENT.json [--threshold 0.1] [--iqr-factor 2] [--max-threshold 1]
              [--codecs reference-v1,reference-v2 | --codecs all] [--normalize pickle] [--all]
    baseline  --ref REF [--out reports/bench-baseline.json] [--full] [-- pytest args]
    interleaved [--codecs reference-v1,TARGET] [--families F,...] [--ops 'round trip',encode,decode] [--processes N]
              [--rounds 15] [--out FILE]

``run`` writes ``OUT/bench-current.json`` (pytest-benchmark) and
``OUT/bench-table.md`` (the README table), then gates when a baseline is
given (``--baseline``/``BENCH_BASELINE``, or ``--baseline-ref``/
``BENCH_BASELINE_REF`` to measure one first) and says so when it did not.
When the gate flags time regressions, ``run`` re-measures only those (and
pickle's benchmark of the same family and measure) in short runs alternating
between the base tree and this one, and fails only on the regressions that
persist (see :mod:`conformance.benchmarks.gate`; ``--confirm-runs 0`` turns
this off). The re-measurements land in ``OUT/confirm/``.
Exit status: pytest's when the benchmarks fail, else 1 on a (confirmed)
regression, 2 when the gate has nothing to compare, 0 otherwise.

``baseline`` measures the base commit's *codec* with *this* commit's corpus
and benchmark modules: it checks ``REF`` out into a temporary git worktree,
copies this checkout's ``conformance/benchmarks/`` over the worktree's, and
runs them there (the worktree's ``reference_codec`` is the one imported).
Same messages, same benchmark names, so every benchmark pairs up, even when
the change under test edits the benchmarks themselves.

``interleaved`` compares ``reference-v1`` by default with the default
engine's ``bench_target`` (``sglang``: SGLang 0.5.23's codec); ``--codecs``
takes any of the benchmarks' codecs (:func:`.codecs.codec_names`), and
``NAME@TAG`` for codec ``NAME`` under another name (``sglang@a,sglang``: an
A/A run, one codec against itself) and ``NAME+TAG`` for a second instance of
it (``sglang+b,sglang``: an A/A run of two instances, as an A/B run has).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator, List, Optional, Sequence, Tuple

from ..interrupts import exit_on_sigterm
from . import gate as gate_mod
from . import results, table

__all__ = ["main"]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
#: Files outside conformance/benchmarks/ that the benchmarks import as measuring tools
#: (not code under test): copied into the base tree with the benchmarks.
MEASUREMENT_SUPPORT = (os.path.join("conformance", "peak_memory.py"),)
#: Defaults of a run: enough rounds for a stable median on a loaded 2-core machine, under 10 minutes.
DEFAULT_PYTEST_ARGS = ["--benchmark-min-rounds=5", "--benchmark-max-time=0.5", "--benchmark-warmup=on", "--benchmark-warmup-iterations=1"]


def _pytest(
    out_json: str, cwd: str, extra: List[str], full: bool, env_extra: Optional[dict] = None, quiet: bool = False
) -> int:
    """Run the benchmarks of ``cwd`` into ``out_json``; ``quiet``: pytest's output only when it fails."""
    env = dict(os.environ)
    if full:
        env["IPC_BENCH_MAX_TENSOR"] = "256MiB"
    env.update(env_extra or {})
    cmd = [
        sys.executable, "-m", "pytest", "conformance/benchmarks", "--benchmark-only", "-p", "no:cacheprovider",
        "--benchmark-sort=name", "--benchmark-columns=median,iqr,rounds", f"--benchmark-json={out_json}",
        *DEFAULT_PYTEST_ARGS, *extra,
    ]
    print("+", shlex.join(cmd), f"(in {cwd})", flush=True)
    if not quiet:
        return subprocess.call(cmd, cwd=cwd, env=env)
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout[-4000:], end="", flush=True)
    return done.returncode


def _report(results_json: str, out: Optional[str], command: Optional[str]) -> str:
    text = table.render(results.load(results_json), command=command, machine=results.machine_line(results_json))
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text


def _compare(baseline: Sequence[results.Record], current: Sequence[results.Record], args: argparse.Namespace) -> gate_mod.GateResult:
    codecs = None if args.codecs == "all" else tuple(c for c in args.codecs.split(",") if c)
    return gate_mod.compare(
        baseline,
        current,
        threshold=args.threshold,
        iqr_factor=args.iqr_factor,
        max_threshold=args.max_threshold,
        codecs=codecs,
        normalize=args.normalize,
        memory_tolerance=args.memory_tolerance,
    )


def _gate(baseline_json: str, current_json: str, args: argparse.Namespace) -> int:
    """Gate two files: the first comparison is the verdict (nothing can be re-measured)."""
    result = _compare(results.load(baseline_json), results.load(current_json), args)
    print(gate_mod.format_result(result, show_all=args.all), end="")
    if gate_mod.flagged(result):
        print("(gate of two files: no confirmation pass; `run --baseline-ref REF` re-measures flagged benchmarks)")
    return gate_mod.exit_status(result)


def _remeasure(
    names: Sequence[str], base_tree: Optional[str], baseline: Sequence[results.Record], pytest_args: List[str],
    full: bool, out_dir: str, runs: int,
) -> List[Tuple[List[results.Record], List[results.Record]]]:
    """``runs`` alternations of short runs of just ``names``: base then current, then current then base, ...

    Without ``base_tree`` only this tree is re-measured and every alternation
    pairs it with ``baseline``. A run that fails yields no records.
    """
    expr, unselectable = gate_mod.k_expression(names)
    for name in unselectable:
        print(f"cannot select {name} with pytest -k: not re-measured")
    if not expr:
        return []
    os.makedirs(out_dir, exist_ok=True)
    trials = []
    for i in range(runs):
        sides = ["current"] if base_tree is None else (["base", "current"] if i % 2 == 0 else ["current", "base"])
        got = {}
        for side in sides:
            out = os.path.abspath(os.path.join(out_dir, f"alternation{i + 1}-{side}.json"))
            if os.path.exists(out):
                os.remove(out)
            rc = _pytest(out, base_tree if side == "base" and base_tree is not None else ROOT, [*pytest_args, "-k", expr], full,
                         {"IPC_BENCH_LIVE": "0"}, quiet=True)
            got[side] = results.load(out) if rc == 0 and os.path.exists(out) else []
            measured = ", ".join(f"{r.family} {r.op} {r.codec} {table.fmt_time(r.median)}" for r in got[side])
            print(f"  alternation {i + 1}/{runs} {side}: " + (measured or f"nothing measured (pytest exit {rc})"), flush=True)
        trials.append((got.get("base", list(baseline)), got["current"]))
    return trials


def _gate_run(baseline_json: str, current_json: str, args: argparse.Namespace, base_tree: Optional[str], pytest_args: List[str]) -> int:
    """The gate of ``run``: first comparison, then the confirmation pass on what it flagged."""
    baseline, current = results.load(baseline_json), results.load(current_json)
    first = _compare(baseline, current, args)
    to_confirm = gate_mod.flagged(first)
    if not to_confirm or args.confirm_runs <= 0:
        print(gate_mod.format_result(first, show_all=args.all), end="")
        if to_confirm:
            print("(no confirmation pass: --confirm-runs 0)")
        return gate_mod.exit_status(first)
    print(gate_mod.format_result(first, show_all=args.all, final=False), end="")
    names = gate_mod.confirmation_selection(to_confirm, current, gate_mod.YARDSTICK)
    print("\nflagged: " + "; ".join(f"{r.family} {r.op} {r.codec} ({r.change:+.1%})" for r in to_confirm))
    print("re-measuring: " + "; ".join(n.rsplit("::", 1)[-1] for n in names)
          + (" in the base tree and this one, interleaved" if base_tree else
             " in this tree only (a baseline JSON without --baseline-ref cannot be re-measured)"))
    trials = _remeasure(names, base_tree, baseline, pytest_args, args.full, os.path.join(args.out_dir, "confirm"), args.confirm_runs)
    confirmation = gate_mod.confirm(
        to_confirm, trials, base_remeasured=base_tree is not None, threshold=args.threshold, iqr_factor=args.iqr_factor,
        max_threshold=args.max_threshold, normalize=args.normalize, yardstick=gate_mod.YARDSTICK,
    )
    print()
    print(gate_mod.format_confirmation(confirmation, first), end="")
    return gate_mod.exit_status(first, confirmation)


@contextlib.contextmanager
def base_tree(ref: str) -> Iterator[str]:
    """A temporary git worktree of ``ref`` with this checkout's benchmarks copied in (removed on exit)."""
    tmp = tempfile.mkdtemp(prefix="bench-baseline-")
    tree = os.path.join(tmp, "tree")
    try:
        subprocess.check_call(["git", "-C", ROOT, "worktree", "add", "--detach", tree, ref])
        try:
            target = os.path.join(tree, "conformance", "benchmarks")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(HERE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            for support in MEASUREMENT_SUPPORT:  # the benchmarks' own tools, measured alike on both sides
                shutil.copy2(os.path.join(ROOT, support), os.path.join(tree, support))
            yield tree
        finally:
            subprocess.call(["git", "-C", ROOT, "worktree", "remove", "--force", tree])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure_base(tree: str, out_json: str, pytest_args: List[str], full: bool) -> int:
    out_json = os.path.abspath(out_json)
    os.makedirs(os.path.dirname(out_json), exist_ok=True)
    # The live pipeline is never gated; leave it out of the baseline.
    return _pytest(out_json, tree, pytest_args, full, {"IPC_BENCH_LIVE": "0"})


def make_baseline(ref: str, out_json: str, pytest_args: List[str], full: bool) -> int:
    """Measure ``ref``'s codec with this checkout's benchmarks (see the module docstring)."""
    with base_tree(ref) as tree:
        return _measure_base(tree, out_json, pytest_args, full)


def _add_gate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=float, default=gate_mod.DEFAULT_THRESHOLD, help="smallest allowed relative slowdown (default 0.10)")
    p.add_argument("--iqr-factor", type=float, default=gate_mod.DEFAULT_IQR_FACTOR, help="allowance per unit of the runs' relative IQR (default 2)")
    p.add_argument("--max-threshold", type=float, default=gate_mod.DEFAULT_MAX_THRESHOLD, help="largest allowance, however noisy (default 1.0)")
    p.add_argument("--memory-tolerance", type=float, default=gate_mod.DEFAULT_MEMORY_TOLERANCE, help="allowed rise of decode peak / payload (default 0.10)")
    p.add_argument("--codecs", default=",".join(gate_mod.DEFAULT_CODECS), help="comma-separated codecs to gate, or 'all'")
    p.add_argument("--normalize", choices=["pickle"], default=None, help="gate times as ratios to pickle's in the same run")
    p.add_argument("--all", action="store_true", help="print every gated benchmark, not only those outside their allowance")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance.benchmarks", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("run", help="run the benchmarks, write the table, gate when a baseline is given")
    p.add_argument("--out-dir", default="reports", help="where the JSON results and the markdown table go (default reports)")
    p.add_argument("--full", action="store_true", help="single tensors up to 256 MiB (default: up to IPC_BENCH_MAX_TENSOR or 64 MiB)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--baseline", default=os.environ.get("BENCH_BASELINE") or None, help="baseline JSON (env BENCH_BASELINE)")
    g.add_argument("--baseline-ref", default=os.environ.get("BENCH_BASELINE_REF") or None, help="git ref to measure as the baseline first (env BENCH_BASELINE_REF)")
    p.add_argument(
        "--confirm-runs", type=int, default=int(os.environ.get("BENCH_CONFIRM_RUNS") or gate_mod.DEFAULT_CONFIRM_RUNS),
        help="alternations of the confirmation pass re-measuring flagged benchmarks (default 3, env BENCH_CONFIRM_RUNS; 0: off)",
    )
    _add_gate_options(p)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: passed to pytest")

    p = sub.add_parser("report", help="the README markdown table of one pytest-benchmark JSON")
    p.add_argument("results", help="a pytest-benchmark JSON file")
    p.add_argument("--out", help="write the table here (default: print it)")
    p.add_argument("--command", help="the command line to print above the table")

    p = sub.add_parser("gate", help="compare two pytest-benchmark JSON files; exit 1 on a regression")
    p.add_argument("baseline", help="the base commit's pytest-benchmark JSON")
    p.add_argument("current", help="this commit's pytest-benchmark JSON")
    _add_gate_options(p)

    p = sub.add_parser("verdict", help="time python -m conformance to a complete verdict, once per implementation; a markdown table")
    p.add_argument("--run", action="append", required=True, metavar="SPEC [ARGS]", help="a codec spec and optional suite arguments, e.g. 'pickle' or 'reference --profile dev'; repeatable")
    p.add_argument("--out", help="also write the table here (e.g. docs/reports/verdict-times.md)")
    p.add_argument("--workers", type=int, default=2, help="xdist workers of each run (default 2)")

    p = sub.add_parser("interleaved", help="time codecs round by round, in turn, on the corpus: ratios that hold on a noisy machine")
    from .interleaved import default_codecs as interleaved_default

    default_codecs = ",".join(interleaved_default())
    p.add_argument("--codecs", default=default_codecs, help=f"comma-separated benchmark codecs; the first is compared with the others; NAME@TAG is codec NAME under another name and NAME+TAG a second instance of it, for A/A runs (default {default_codecs})")
    p.add_argument("--families", help="comma-separated corpus families (default: all of this run's)")
    p.add_argument("--ops", default="round trip", help="comma-separated: 'round trip', encode, decode (default 'round trip')")
    p.add_argument("--rounds", type=int, default=15, help="rounds per family and operation, rounded up to whole cycles of the balanced order: 16 for two codecs, 18 for three (default 15)")
    p.add_argument("--processes", type=int, default=1, help="repeat in this many fresh processes, one after the other, and take medians (default 1: this one)")
    p.add_argument("--evict", default="0", metavar="SIZE", help="time each call alone after copying SIZE bytes (e.g. 32MiB): cold caches, as in a server between messages (default 0: a hot loop)")
    p.add_argument("--out", help="also write the table here (e.g. docs/reports/interleaved-ENGINE.md)")

    p = sub.add_parser("baseline", help="measure a git ref's codec with this checkout's benchmarks")
    p.add_argument("--ref", required=True, help="the git ref whose codec to measure")
    p.add_argument("--out", default=os.path.join("reports", "bench-baseline.json"), help="where to write its JSON (default reports/bench-baseline.json)")
    p.add_argument("--full", action="store_true", help="single tensors up to 256 MiB, as for run --full")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: passed to pytest")
    return parser


def _strip_dashes(args: List[str]) -> List[str]:
    return args[1:] if args[:1] == ["--"] else args


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "report":
        print(_report(args.results, args.out, args.command), end="")
        return 0
    if args.cmd == "gate":
        return _gate(args.baseline, args.current, args)
    if args.cmd == "baseline":
        return make_baseline(args.ref, args.out, _strip_dashes(args.pytest_args), args.full)
    if args.cmd == "verdict":
        from .verdict_times import main_verdict

        return main_verdict(args.run, args.out, args.workers)

    if args.cmd == "interleaved":
        from .corpus import parse_size
        from .interleaved import main_interleaved

        families = args.families.split(",") if args.families else None
        try:
            evict = parse_size(args.evict)
        except ValueError as exc:
            raise SystemExit(f"--evict: {exc}") from None
        ops = [op.strip() for op in args.ops.split(",")]
        return main_interleaved(args.codecs.split(","), families, ops, args.rounds, args.out, args.processes, evict)

    with contextlib.ExitStack() as stack:
        return _run(args, stack)


def _run(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    pytest_args = _strip_dashes(args.pytest_args)
    os.makedirs(args.out_dir, exist_ok=True)
    baseline = args.baseline
    tree = None
    if args.baseline_ref:
        # The worktree stays until the end of the run: the confirmation pass re-measures in it.
        tree = stack.enter_context(base_tree(args.baseline_ref))
        baseline = os.path.join(args.out_dir, "bench-baseline.json")
        rc = _measure_base(tree, baseline, pytest_args, args.full)
        if rc != 0:
            print(f"baseline run of {args.baseline_ref} failed (pytest exit {rc})", file=sys.stderr)
            return rc
    current = os.path.join(args.out_dir, "bench-current.json")
    rc = _pytest(os.path.abspath(current), ROOT, pytest_args, args.full)
    if rc != 0:
        return rc
    md = os.path.join(args.out_dir, "bench-table.md")
    command = "python -m conformance.benchmarks run" + (" --full" if args.full else "") + (
        " -- " + shlex.join(pytest_args) if pytest_args else ""
    )
    print(_report(current, md, command), end="")
    print(f"wrote {current} and {md}")
    if not baseline:
        print("NOT GATED: no baseline (give --baseline JSON / BENCH_BASELINE, or --baseline-ref REF / BENCH_BASELINE_REF)")
        return 0
    print(f"gating {current} against {baseline}")
    return _gate_run(baseline, current, args, tree, pytest_args)


if __name__ == "__main__":
    exit_on_sigterm()  # a CI timeout or kill stops the workers and subprocesses started, too
    sys.exit(main())
