"""``python -m conformance.fuzz``: the seeded long fuzz run against one implementation.

Usage::

    python -m conformance.fuzz --codec reference --frames 1000000 --workers 2 --seed 0
    python -m conformance.fuzz --codec mypkg.ipc:MyCodec --frames 100000 --report fuzz.json
    python -m conformance.fuzz --testee "./my-testee" --frames 20000
    python -m conformance.fuzz --codec sglang --frames 20000 --save-findings conformance/fuzz/findings

Prints the counts (frames tried, decoded, rejected with the decode error,
other exceptions, hangs, peak memory, code executed) and one line per distinct
finding; exits 0 only when there was no finding. ``--save-findings DIR``
shrinks one example of each finding and writes it there (see
:mod:`conformance.fuzz.findings`); ``--reproduce I`` decodes input ``I`` of
the seeded run in this process and prints its outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from conformance.engines import DEFAULT_ENGINE, ENGINE_ENV, ENGINES, engine_named_by, engine_spec_from_environment, load_engine

from .loop import RunConfig, Target, reproduce, run


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance.fuzz", description=__doc__.split("\n\n")[0])
    target = p.add_mutually_exclusive_group(required=True)
    p.add_argument("--engine", help=f"whose messages seed the run: {', '.join(sorted(ENGINES))} or MODULE:ATTR (default {DEFAULT_ENGINE}; as for python -m conformance)")
    target.add_argument("--codec", help="built-in name or MODULE:ATTR (as for python -m conformance)")
    target.add_argument("--testee", help="command of a program speaking conformance/PROTOCOL.md")
    p.add_argument("--frames", type=int, default=100_000, help="inputs to try (default 100000)")
    p.add_argument("--seed", type=int, default=0, help="run seed: input i of seed s is always the same (default 0)")
    p.add_argument("--workers", type=int, default=2, help="watched worker processes decoding in parallel (default 2)")
    p.add_argument("--per-type", type=int, default=2, help="seed messages per message type (default 2)")
    p.add_argument("--time-bound", type=float, default=2.0, help="seconds one decode may take (default 2)")
    p.add_argument("--memory-bound-mib", type=int, default=256, help="peak memory one decode may add (default 256 MiB)")
    p.add_argument("--hang-timeout", type=float, default=20.0, help="seconds without progress before a worker counts as hung")
    p.add_argument("--report", help="write the result as JSON here")
    p.add_argument("--save-findings", metavar="DIR", help="shrink one example of each finding and save it in DIR")
    p.add_argument("--reproduce", type=int, metavar="INDEX", help="decode input INDEX of the seeded run here and print it")
    p.add_argument("--unsafe-allow-code-executing-codec", action="store_true",
                   help="fuzz a codec that declares executes_code_on_decode (pickle): only in a throwaway sandbox")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    engine = args.engine or engine_named_by(args.codec)  # as for python -m conformance: --codec sglang is the installed SGLang's
    if engine:
        os.environ[ENGINE_ENV] = engine  # read here and by the worker processes
    if args.save_findings and not load_engine(engine_spec_from_environment()).reference_schema:
        print("conformance.fuzz: --save-findings writes reference-wire vectors, and this engine's messages are not the reference "
              "schema's; run without it", file=sys.stderr)
        return 2
    target = Target(codec=args.codec, testee=args.testee)
    codec = target.load()
    if codec.caps.executes_code_on_decode and not args.unsafe_allow_code_executing_codec:
        print(f"conformance.fuzz: {codec.name} executes code while decoding (pickle); fuzzing it would run "
              "whatever the damaged bytes say. Pass --unsafe-allow-code-executing-codec in a sandbox.", file=sys.stderr)
        return 2
    if args.reproduce is not None:
        name, frames, outcome = reproduce(target, args.seed, args.reproduce, per_type=args.per_type)
        print(f"input {args.reproduce} (seed {args.seed}, attack {name}): {outcome.describe()}")
        print("frames: " + json.dumps([f.hex() for f in frames]))
        return 1 if outcome.is_finding else 0
    config = RunConfig(
        frames=args.frames, seed=args.seed, workers=args.workers, per_type=args.per_type,
        time_bound=args.time_bound, memory_bound=args.memory_bound_mib << 20, hang_timeout=args.hang_timeout,
    )
    last = [0.0]

    def progress(result) -> None:
        import time

        now = time.monotonic()
        if now - last[0] > 10 and sys.stderr.isatty():
            last[0] = now
            print(f"  ... {result.tried}/{config.frames}", file=sys.stderr)

    result = run(target, config, progress=progress)
    if args.save_findings:
        from .findings import shrink_and_save

        sys.unraisablehook = lambda unraisable: None  # decoders' __del__ noise while shrinking (counted in the run)
        seen = set()
        for finding in result.findings:
            if finding.signature in seen or finding.kind in ("hang", "crash"):
                continue
            saved = shrink_and_save(codec, finding, directory=args.save_findings)
            if saved:
                seen.add(finding.signature)
                print(f"  saved {saved.name}: {len(b''.join(bytes.fromhex(f) for f in saved.frames))} bytes, "
                      f"reference: {saved.reference_reason or 'DECODES IT'}")
    if args.report:
        with open(args.report, "w") as fh:
            json.dump(result.to_json(), fh, indent=1)
    print(result.summary())
    close = getattr(codec.impl, "close", None)
    if callable(close):
        close()
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
