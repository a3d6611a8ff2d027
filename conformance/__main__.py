"""``python -m conformance``: run the conformance suite against one implementation.

Usage::

    python -m conformance --codec reference                  # a built-in
    python -m conformance --codec mypkg.ipc:MsgpackCodec     # any Python object
    python -m conformance --testee "./my-gateway-testee"     # any program (PROTOCOL.md)
    python -m conformance --codec sglang --failure-list conformance/engines/sglang/failure_lists/sglang-0.5.23.txt
    python -m conformance --engine vllm --codec vllm      # another engine's messages and codecs

Options of its own, then any pytest arguments (``-n 2``, ``-k roundtrip``, ``-x``).

The Hypothesis profile is ``ci`` unless ``--profile`` or ``$HYPOTHESIS_PROFILE``
says otherwise: deterministic and bounded (about a minute for a passing
codec on two cores, a few minutes for one that fails everywhere). ``dev``
draws random examples (about ten times the time); ``nightly`` many more.
Under ``ci`` the run is re-executed with ``PYTHONHASHSEED=0`` when no hash
seed is set, so that two runs draw the same messages.

Exit status 0 only when the implementation conforms, findings its failure
list names aside (the closing line counts them); the last line printed is
``CONFORMANCE SUITE PASSED|FAILED: ...``, also when the run is interrupted
(Ctrl-C, or SIGTERM from a CI timeout).
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from typing import List, Optional

from .engines import DEFAULT_ENGINE, ENGINE_ENV, ENGINES, EngineSelectionError
from .interrupts import interrupt_on_sigterm
from .plugin import CODEC_ENV, TESTEE_ENV, CodecSelectionError, codec_from_environment

__all__ = ["main", "console"]

SUITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suite")
DEFAULT_PROFILE = "ci"


def _builtin_codecs() -> str:
    """``engine: name, name; ...`` for the help text, read from each built-in engine (none is set up)."""
    import importlib

    listed = []
    for name, target in sorted(ENGINES.items()):
        module_name, _, attr = target.partition(":")
        try:
            codecs = getattr(importlib.import_module(module_name), attr).codecs
        except (ImportError, AttributeError, EngineSelectionError):
            continue
        listed.append(f"{name}: {', '.join(sorted(codecs))}")
    return "; ".join(listed)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Property-based conformance suite for LLM-serving IPC codecs.",
        epilog="Unrecognised arguments are passed to pytest (-n 2, -k roundtrip, -x, a test id).",
    )
    parser.add_argument(
        "--engine",
        help=f"whose IPC messages: {', '.join(sorted(ENGINES))} or MODULE:ATTR naming an Engine (default: ${ENGINE_ENV}; else the engine "
        f"a --codec is named after, the installed engine's own codec on its own classes; else {DEFAULT_ENGINE})",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--codec", help=f"a built-in codec of the engine ({_builtin_codecs()}) or MODULE:ATTR")
    target.add_argument("--testee", help="command of a program speaking conformance/PROTOCOL.md")
    parser.add_argument("--failure-list", help="strict known-failure list (see conformance/runner/failure_list.py)")
    parser.add_argument("--update-failure-list", action="store_true", help="create or rewrite the failure list from this run (says what it wrote)")
    parser.add_argument(
        "--seed",
        type=int,
        help="seed every property from its test id and this number (default 0 under the ci profile; see conformance/runner/seeding.py)",
    )
    parser.add_argument("--report", help="write a JSON report to this path")
    parser.add_argument(
        "--against-release",
        metavar="VERSION|SNAPSHOT|none",
        help="compare the installed engine's wire with this release's snapshot (default: the newest snapshot of an older release; none: no comparison)",
    )
    parser.add_argument(
        "--profile",
        choices=["ci", "dev", "nightly"],
        help="Hypothesis profile (default: $HYPOTHESIS_PROFILE, else ci: deterministic, 8 examples per test)",
    )
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args, pytest_args = _parser().parse_known_args(argv)
    if args.engine:
        os.environ[ENGINE_ENV] = args.engine
    if args.codec:
        os.environ[CODEC_ENV] = args.codec
        os.environ.pop(TESTEE_ENV, None)
    elif args.testee:
        os.environ[TESTEE_ENV] = args.testee
        os.environ.pop(CODEC_ENV, None)
    profile = args.profile or os.environ.get("HYPOTHESIS_PROFILE") or DEFAULT_PROFILE
    os.environ["HYPOTHESIS_PROFILE"] = profile
    if profile == "ci" and "PYTHONHASHSEED" not in os.environ and argv is None:
        # Set and string orders follow the hash seed; ci promises the same messages every run.
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "conformance", *sys.argv[1:]])
    try:  # fail before pytest starts when the selection is wrong; the suite reuses what loads
        codec_from_environment()
    except CodecSelectionError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        print("CONFORMANCE SUITE FAILED: 0 successes, 0 skipped, 0 expected failures, 1 unexpected failures")
        return 2
    if args.failure_list and not args.update_failure_list:
        problem = _failure_list_problem(args.failure_list)
        if problem:
            print(f"conformance: {problem}", file=sys.stderr)
            print("CONFORMANCE SUITE FAILED: 0 successes, 0 skipped, 0 expected failures, 1 unexpected failures")
            return 2
    import pytest

    options = ["-p", "conformance.runner.seeding", "-p", "conformance.runner.variant_coverage", "-p", "conformance.runner.shrinking", "-p", "conformance.runner.report"]
    options += ["-p", "conformance.runner.failure_list"]
    if args.seed is not None:
        if args.seed < 0:
            print(f"conformance: --seed must be a non-negative integer, got {args.seed}", file=sys.stderr)
            return 2
        options += ["--seed", str(args.seed)]
    # -rN: the conformance summary groups the failures; a list of every failing id (-r f) is a flag away.
    options += ["--rootdir", SUITE_DIR, "-c", os.devnull, "-rN"]
    if args.failure_list:
        options += ["--failure-list", os.path.abspath(args.failure_list)]
    if args.update_failure_list:
        options += ["--update-failure-list"]
    if args.report:
        options += ["--report", os.path.abspath(args.report)]
    if args.against_release:
        against = args.against_release
        options += ["--against-release", os.path.abspath(against) if against.endswith(".json") else against]
    has_path = any(not a.startswith("-") and (os.path.exists(a.split("::")[0])) for a in pytest_args)
    interrupt_on_sigterm()  # a CI timeout: the summary, report and closing line still come
    return int(pytest.main(options + pytest_args + ([] if has_path else [SUITE_DIR])))


def _failure_list_problem(path: str) -> Optional[str]:
    """Why the failure list at ``path`` cannot be used, or None."""
    from .runner.failure_list import parse_failure_list

    if not os.path.exists(path):
        return f"failure list {path} does not exist: create it with --update-failure-list"
    try:
        parse_failure_list(path)
    except ValueError as exc:
        return str(exc)
    return None


def console() -> None:
    """The command-line entry point: :func:`main`, then exit without interpreter teardown.

    Some engine dependencies (SWIG extensions) print a DeprecationWarning while
    the interpreter tears down, below the verdict. Exit handlers still run;
    only module teardown is skipped.
    """
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":
    console()
