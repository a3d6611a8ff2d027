"""No process outlives a command of this project stopped by SIGTERM, Ctrl-C or SIGKILL.

``python -m conformance.benchmarks interleaved --processes N`` measures in a
worker process; ``python -m conformance.live`` runs its scheduler and
detokenizer as processes; ``python -m conformance.fuzz`` its watched
workers. The signal goes to the command's own process, as ``kill PID`` (a CI
timeout) sends it, not to its process group: its children get nothing from
the signal itself. On SIGTERM and Ctrl-C the command stops them; on SIGKILL
it runs nothing, and each child ends itself once its parent is gone
(:func:`conformance.interrupts.stop_with_parent`). (SGLang's real front end
has its own tests: ``conformance/live/tests/test_frontend_cleanup.py``.)
Linux only: children are read from ``/proc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children are read from /proc")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_START_S = 120
_END_S = 30

#: Each command with enough work to run for many minutes if nothing stopped it.
COMMANDS = {
    "benchmarks-interleaved": ["conformance.benchmarks", "interleaved", "--codecs", "reference-v1,pickle", "--families", "control-AbortReq",
                               "--rounds", "100000", "--processes", "2"],
    "live": ["conformance.live", "--compare", "pickle", "--requests", "100000", "--device", "cpu"],
    "fuzz": ["conformance.fuzz", "--codec", "reference", "--frames", "100000000", "--workers", "2"],
}  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["SIGTERM", "SIGINT", "SIGKILL"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_stopped_by_a_signal_leaves_no_process_running(name, sig, tmp_path):
    log = tmp_path / "out.txt"  # a file, not a pipe: a process left behind would hold a pipe open
    with open(log, "wb") as out:
        command = subprocess.Popen([sys.executable, "-m", *COMMANDS[name]], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    started = []
    try:
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline and command.poll() is None and not any(map(_is_spawned, started)):
            time.sleep(0.2)
            started = _children(command.pid)
        assert any(map(_is_spawned, started)), f"{name}: no process started: {_tail(log)}"
        time.sleep(3)  # the children import and start working
        started = _children(command.pid)  # the workers, and multiprocessing's resource tracker
        command.send_signal(sig)
        try:
            command.wait(timeout=_END_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name} was still running {_END_S} s after {signal.Signals(sig).name}")
        grace = time.monotonic() + 10
        while _alive(started) and time.monotonic() < grace:
            time.sleep(0.1)
        left = _alive(started)
        assert not left, f"{signal.Signals(sig).name} to {name} left its processes running: {left}"
        assert command.returncode != 0, _tail(log)
    finally:
        command.kill()
        for pid in _alive(started):  # do not leak them into the next test
            os.kill(pid, signal.SIGKILL)


def _stat(pid: int):
    """``(state, ppid)`` of process ``pid``, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def _children(pid: int):
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and (_stat(int(p)) or ("", 0))[1] == pid]


def _alive(pids):
    return [p for p in pids if (_stat(p) or ("Z", 0))[0] != "Z"]


def _is_spawned(pid: int) -> bool:
    """Whether ``pid`` is a multiprocessing child started by spawn (a worker, not the resource tracker)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"spawn_main" in f.read()
    except OSError:
        return False


def _tail(log) -> str:
    return log.read_bytes().decode(errors="replace")[-2000:]
