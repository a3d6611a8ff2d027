"""Time to a complete verdict: how long ``python -m conformance`` takes for each of several implementations.

``python -m conformance.benchmarks verdict --run reference --run sglang --out docs/reports/verdict-times.md``
runs the suite once per ``--run`` (``SPEC [more arguments]``, e.g.
``"reference --profile dev"``), one after the other with ``-n 2``, and writes a
markdown table: the command, its closing line and its wall time, with the
commit, the machine and the date above it. A figure for a failing
implementation is the point: the suite must say *no* in minutes too.

It measures; it gates nothing (a timed test would be flaky on shared
machines). The run's own JSON reports go to a temporary directory.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

from ..provenance import header

__all__ = ["VerdictTime", "measure", "render", "main_verdict"]



@dataclass(frozen=True)
class VerdictTime:
    command: str
    closing_line: str
    seconds: float
    exit_status: int


def _closing_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("CONFORMANCE SUITE")]
    return lines[-1] if lines else "(no closing line)"


def measure(run: str, *, workers: int = 2, timeout: Optional[float] = None) -> VerdictTime:
    """Run ``python -m conformance --codec SPEC -n WORKERS [more arguments]`` once and time it."""
    spec, *extra = shlex.split(run)
    argv = ["--codec", spec, "-n", str(workers), *extra]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "conformance", *argv, "--report", os.path.join(tmp, "report.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
        seconds = time.perf_counter() - start
    return VerdictTime("python -m conformance " + shlex.join(argv), _closing_line(done.stdout), seconds, done.returncode)


def render(times: Sequence[VerdictTime], command: str) -> str:
    head = header("one after the other", command)
    rows = ["| command | verdict | wall time |", "|---|---|---|"]
    for t in times:
        rows.append(f"| `{t.command}` | `{t.closing_line}` | {t.seconds:.1f} s |")
    return head + "\n".join(rows) + "\n"


def main_verdict(runs: List[str], out: Optional[str], workers: int) -> int:
    """The ``verdict`` subcommand: measure every run, print the table, write it to ``out``."""
    times = []
    for run in runs:
        print(f"measuring: {run}", flush=True)
        times.append(measure(run, workers=workers))
        print(f"  {times[-1].seconds:.1f} s: {times[-1].closing_line}", flush=True)
    command = "python -m conformance.benchmarks verdict " + " ".join(f"--run {shlex.quote(r)}" for r in runs) + (f" --out {out}" if out else "")
    text = render(times, command)
    print(text, end="")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {out}")
    return 0 if all(t.closing_line != "(no closing line)" for t in times) else 1
