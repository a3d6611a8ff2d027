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

SIGKILL (a CI job's hard timeout, the OOM killer) runs no cleanup at all,
so what the command started cannot be stopped by the command. Each process
a command starts calls :func:`stop_with_parent` first instead: once its
parent is gone, it sends itself SIGTERM, and its own way of ending runs.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from typing import Any

__all__ = ["exit_on_sigterm", "interrupt_on_sigterm", "stop_with_parent"]

#: How often a process not started by multiprocessing looks whether its parent is still there.
PARENT_POLL_S = 1.0


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


def stop_with_parent() -> None:
    """From now on, this process sends itself SIGTERM once the process that started it has ended, however it ended.

    For a process a command starts (a worker, a pipeline process, a server):
    a command killed by SIGKILL stops nothing it started, and a child waiting
    on a socket or measuring for minutes would otherwise live on. A daemon
    thread waits for the parent: a ``multiprocessing`` child waits on
    ``multiprocessing.parent_process().sentinel`` (no polling); any other
    looks every :data:`PARENT_POLL_S` seconds whether ``os.getppid()`` has
    changed (an orphan is adopted by another process). SIGTERM then ends the
    process as its handler, or the default action, does.
    """
    parent = multiprocessing.parent_process()
    if parent is not None:
        sentinel = parent.sentinel

        def wait() -> None:
            multiprocessing.connection.wait([sentinel])
    else:
        ppid = os.getppid()

        def wait() -> None:
            while os.getppid() == ppid:
                time.sleep(PARENT_POLL_S)

    def watch() -> None:
        wait()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="stop-with-parent", daemon=True).start()
