"""SIGTERM ends a command as Ctrl-C does: by unwinding, so that what it started is stopped.

A CI timeout, ``kill`` or ``pkill`` sends SIGTERM, whose default action ends
the process at once: no ``finally`` or ``with`` exit runs, and the servers,
worker processes and subprocesses the command started live on (a benchmark
worker went on measuring for a minute beside the next run). A command that
starts any calls :func:`exit_on_sigterm` first; SIGTERM then raises
``SystemExit`` in the main thread, wherever it waits, and each ``finally``
on the way out stops what it started. A pytest run calls
:func:`interrupt_on_sigterm` instead: pytest reports a KeyboardInterrupt as
an interrupted run, with its summary.
"""

from __future__ import annotations

import signal
from typing import Any

__all__ = ["exit_on_sigterm", "interrupt_on_sigterm"]


def exit_on_sigterm() -> None:
    """From now on, SIGTERM raises ``SystemExit(128 + SIGTERM)`` (exit status 143, as the default action reports it) in the main thread.

    Every SIGTERM raises, a second one during the unwinding too: it ends the
    cleanup step it lands in, and the ``finally`` blocks outside that step
    still run. Call it from the main thread (``signal.signal`` requires it).
    """
    signal.signal(signal.SIGTERM, _raise_exit)


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def interrupt_on_sigterm() -> None:
    """From now on, the first SIGTERM raises ``KeyboardInterrupt`` in the main thread, as Ctrl-C does; a second one ends the process at once."""

    def handler(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
