"""``python -m conformance.vectors generate|check|list|test``: the golden vector files, and any testee against them.

``generate``  (re)write ``v1/`` and ``v2/`` from ``CASES``, verifying each vector
              against the reference codec, and delete files no case produces.
              With ``--engine NAME``: that engine's engine-neutral vectors,
              with its own codec (the engine must be importable, at the
              release its declaration names).
``check``     exit 1, with one line per stale file, if the files on disk differ
              from what ``generate`` would write; exit 0 when they are current.
              Also every engine's engine-neutral vectors (only ``--engine``'s,
              if given): their format always, regeneration where the engine is
              importable, else one ``skip:`` line saying why.
``list``      one line per case: file, then description (``--engine``: its cases).
``test``      send an engine's vectors to a testee answering
              ``conformance/PROTOCOL.md`` §9 (``--testee CMD``), with an
              optional strict ``--failure-list``: see
              :mod:`conformance.vectors.engine_testee`.

``--dir DIR`` works on another directory (default: this package's own).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import List, Optional

from .build import VectorError, check, generate
from .format import VECTORS_DIR
from .registry import CASES


def _engines_with_vectors(spec: Optional[str]) -> List[str]:
    from conformance.engines import ENGINES, find_engine

    if spec is not None:
        return [spec]
    return [name for name in sorted(ENGINES) if find_engine(name).value_vectors is not None]


def _engine_command(args: argparse.Namespace) -> int:
    from .engine_build import engine_cases, generate_engine
    from .engine_testee import run_testee

    if args.command == "list":
        from conformance.engines import find_engine

        declared = find_engine(args.engine).value_vectors
        if declared is None:
            raise VectorError(f"engine {args.engine!r} declares no value_vectors")
        for case in engine_cases(declared.cases):
            print(f"{case.file}  {case.type}  {case.description}")
        return 0
    if args.command == "generate":
        written, removed = generate_engine(args.engine)
        for rel in written:
            print(f"wrote   {rel}")
        for rel in removed:
            print(f"removed {rel}")
        print(f"{args.engine}: {len(written)} written, {len(removed)} removed")
        return 0
    if not args.testee:
        print("error: test needs --testee CMD", file=sys.stderr)
        return 2
    reference = shlex.split(args.reference) if args.reference else None
    return run_testee(args.engine, shlex.split(args.testee), family=args.family, failure_list=args.failure_list, reference=reference, timeout=args.timeout)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.vectors", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["generate", "check", "list", "test"], help="generate: write the files from the cases; check: fail if a file is stale; list: print the vectors; test: run a testee against an engine's vectors")
    parser.add_argument("--dir", default=VECTORS_DIR, help="vector directory of the reference vectors (default: %(default)s)")
    parser.add_argument("--engine", help="an engine's engine-neutral vectors (a name or MODULE:ATTR) instead of the reference vectors")
    parser.add_argument("--family", help="test: only this message family's vectors")
    parser.add_argument("--testee", help="test: the testee's command line (split like a POSIX shell)")
    parser.add_argument("--failure-list", help="test: known failures, one per line (VECTOR  OUTCOME  # reason); strict both ways")
    parser.add_argument("--reference", help="test: a §9 host of the engine's wire reference (its command line) that decodes the testee's encode_value frames; without it the testee decodes its own")
    parser.add_argument("--timeout", type=float, default=30.0, help="test: seconds per request (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        if args.command == "test" or (args.engine and args.command in ("generate", "list")):
            if not args.engine:
                print("error: test needs --engine NAME", file=sys.stderr)
                return 2
            return _engine_command(args)
        if args.command == "list":
            for case in CASES:
                print(f"{case.file}  {case.description}")
            return 0
        if args.command == "generate":
            written, removed = generate(args.dir)
            for rel in written:
                print(f"wrote   {rel}")
            for rel in removed:
                print(f"removed {rel}")
            print(f"{len(CASES)} vectors: {len(written)} written, {len(removed)} removed, {len(CASES) - len(written)} unchanged")
            return 0
        problems = [] if args.engine else check(args.dir)
        counted = 0 if args.engine else len(CASES)
        from .engine_build import check_engine

        for name in _engines_with_vectors(args.engine):
            found, skip, count = check_engine(name)
            problems += [f"{name}: {line}" for line in found]
            counted += count
            if skip is not None:
                print(f"skip: {name}'s {count} vector files: format checked, regeneration not ({skip})")
    except VectorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if problems:
        for line in problems:
            print(line)
        print(f"{len(problems)} vector file(s) stale: run `python -m conformance.vectors generate` (with `--engine NAME` for an engine's) and review the diff")
        return 1
    print(f"{counted} vector files up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
