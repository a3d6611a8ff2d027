"""No process outlives ``python -m conformance.live --frontend sglang``: after a run, after a failure, after Ctrl-C, SIGTERM or SIGKILL.

Each test runs the driver as a child, takes the tree of processes it started
(SGLang's server, its scheduler and detokenizer, multiprocessing's helpers)
once the scheduler is up, and checks that none of them is alive once the
driver has exited. Skipped where SGLang is not installed (``tox -e sglang-live``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest

psutil = pytest.importorskip("psutil")


def _server_installed() -> bool:
    # Found, not imported: importing SGLang's server here would import its
    # io_struct and fix the IPC mode (pickle, its default) for the whole pytest
    # process, which then breaks the tests that need its msgpack codec.
    try:
        found = importlib.util.find_spec("sglang.srt.entrypoints.http_server") is not None
    except ImportError:
        return False
    return found and all(importlib.util.find_spec(name) is not None for name in ("fastapi", "uvicorn", "uvloop"))


if not _server_installed():
    pytest.skip("SGLang's server is not installed (tox -e sglang-live)", allow_module_level=True)

_STARTUP_S = 240


def _driver(tmp_path, *extra):
    argv = [sys.executable, "-m", "conformance.live", "--frontend", "sglang", "--compare", "pickle", "--concurrency", "2", "--workdir", str(tmp_path), *extra]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _tree_once_scheduler_runs(driver):
    """The driver's descendants, once one of them is SGLang's scheduler."""
    deadline = time.monotonic() + _STARTUP_S
    parent = psutil.Process(driver.pid)
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            pytest.fail(f"the driver exited ({driver.returncode}) before the scheduler started:\n{driver.stdout.read().decode(errors='replace')[-3000:]}")
        try:
            tree = parent.children(recursive=True)
            if any("sglang::scheduler" in " ".join(p.cmdline()) for p in tree):
                return tree
        except psutil.Error:
            pass
        time.sleep(0.2)
    driver.kill()
    pytest.fail("SGLang's scheduler did not start")


def _alive(procs):
    left = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{p.pid} {' '.join(p.cmdline())[:80]}")
        except psutil.NoSuchProcess:
            continue
    return left


def _assert_none_left(tree, grace_s=5.0):
    deadline = time.monotonic() + grace_s
    while _alive(tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _alive(tree)
    for pid in (int(x.split()[0]) for x in left):  # do not leak them into the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"processes left behind: {left}"


def test_no_process_left_after_a_completed_run(tmp_path):
    driver = _driver(tmp_path, "--requests", "60")
    tree = _tree_once_scheduler_runs(driver)
    out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0, out.decode(errors="replace")[-3000:]
    _assert_none_left(tree)


def test_no_process_left_after_the_server_dies_mid_run(tmp_path):
    driver = _driver(tmp_path, "--requests", "2000")
    tree = _tree_once_scheduler_runs(driver)
    scheduler = next(p for p in tree if "sglang::scheduler" in " ".join(p.cmdline()))
    time.sleep(2)  # requests in flight
    scheduler.kill()
    out, _ = driver.communicate(timeout=600)
    assert driver.returncode != 0, "the driver should fail when the scheduler dies"
    _assert_none_left(tree)


def test_no_process_left_after_the_benchmark_fails_with_the_server_up(tmp_path):
    # more new tokens than the model's context holds: every benchmark request fails while the server stays up
    driver = _driver(tmp_path, "--skip-check", "--bench", "--bench-concurrency", "1", "--prompts", "1:2", "--repeats", "1", "--input-len", "8", "--output-len", "5000")
    tree = _tree_once_scheduler_runs(driver)
    out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 2, out.decode(errors="replace")[-3000:]
    assert b"the benchmark" in out
    _assert_none_left(tree)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["ctrl_c", "sigterm", "sigkill"])
def test_no_process_left_after_a_signal_to_the_driver(tmp_path, sig):
    # SIGTERM is what a CI timeout or kill sends: the driver unwinds as on Ctrl-C (conformance.interrupts).
    # SIGKILL (a hard timeout) runs nothing in the driver: the server sees its parent gone and shuts down.
    driver = _driver(tmp_path, "--requests", "2000")
    tree = _tree_once_scheduler_runs(driver)
    time.sleep(2)
    driver.send_signal(sig)
    driver.communicate(timeout=600)
    _assert_none_left(tree, grace_s=30.0 if sig == signal.SIGKILL else 5.0)
    assert driver.returncode != 0
    if sig == signal.SIGTERM:
        assert driver.returncode == 128 + sig, "the driver did not unwind (killed by the signal's default action)"
