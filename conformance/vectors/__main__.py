"""``python -m conformance.vectors generate|check|list``: the golden vector files.

``generate``  (re)write ``v1/`` and ``v2/`` from ``CASES``, verifying each vector
              against the reference codec, and delete files no case produces.
``check``     exit 1, with one line per stale file, if the files on disk differ
              from what ``generate`` would write; exit 0 when they are current.
``list``      one line per case: file, then description.

``--dir DIR`` works on another directory (default: this package's own).
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from .build import VectorError, check, generate
from .format import VECTORS_DIR
from .registry import CASES


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.vectors", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["generate", "check", "list"], help="generate: write the files from the cases; check: fail if a file is stale; list: print the vectors")
    parser.add_argument("--dir", default=VECTORS_DIR, help="vector directory (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
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
        problems = check(args.dir)
    except VectorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if problems:
        for line in problems:
            print(line)
        print(f"{len(problems)} vector file(s) stale: run `python -m conformance.vectors generate` and review the diff")
        return 1
    print(f"{len(CASES)} vector files up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
