"""``python -m conformance.live``: run one workload through the pipeline once per codec and compare.

Exit status: 0 when every request's answers are identical across the codecs
(each compared with the first), 1 on any mismatch or when a codec's run
failed (a process died, answers never came), 2 when the baseline itself
could not run or an option is bad.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from .compare import compare_results
from .pipeline import PipelineError, default_device, run_pipeline
from .workload import generate_workload

_SHOWN = 20


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.live", description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", default="pickle,reference", help="comma-separated codec specs; the first is the baseline (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=32, help="workload size (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="workload seed (default: %(default)s)")
    parser.add_argument("--model-seed", type=int, default=0, help="model weight seed (default: %(default)s)")
    parser.add_argument("--device", default=None, help="scheduler device (default: cuda when available, else cpu)")
    parser.add_argument("--concurrency", type=int, default=8, help="most requests in flight (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed for the answers of one run")
    parser.add_argument("--json", metavar="FILE", help="write the figures and mismatches as JSON")
    args = parser.parse_args(argv)

    codecs = [c.strip() for c in args.compare.split(",") if c.strip()]
    if not codecs:
        parser.error("--compare needs at least one codec")
    device = args.device or default_device()
    workload = generate_workload(args.requests, args.seed)
    print(f"live pipeline: {args.requests} work items (seed {args.seed}), device {device}, concurrency {args.concurrency}")
    results, failures = [], []
    for codec in codecs:
        try:
            result = run_pipeline(codec, workload, device=device, concurrency=args.concurrency, model_seed=args.model_seed, timeout_s=args.timeout)
        except (PipelineError, ValueError) as exc:
            print(f"FAILED {codec}: {exc}", flush=True)
            failures.append(f"{codec}: {exc}")
            if not results:
                print("error: the baseline did not run; nothing to compare against", file=sys.stderr)
                return 2
            continue
        print(result.line(), flush=True)
        results.append(result)

    mismatches = [m for other in results[1:] for m in compare_results(results[0], other, workload)]
    for m in mismatches[:_SHOWN]:
        print(f"MISMATCH {m}")
    if len(mismatches) > _SHOWN:
        print(f"... and {len(mismatches) - _SHOWN} more")
    if len(codecs) > 1:
        verdict = "identical" if not (mismatches or failures) else f"{len(mismatches)} mismatch(es), {len(failures)} failed run(s)"
        print(f"{verdict}: {len(results[0].outputs)} requests x {len(results)} codecs ({', '.join(r.codec for r in results)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "requests": args.requests,
                    "seed": args.seed,
                    "device": device,
                    "concurrency": args.concurrency,
                    "runs": [r.summary() for r in results],
                    "mismatches": [str(m) for m in mismatches],
                    "failed_runs": failures,
                },
                f,
                indent=2,
            )
    return 1 if (mismatches or failures) else 0


if __name__ == "__main__":
    sys.exit(main())
