"""A bounded verdict: every failing test is reported, and each distinct failure is shrunk once, within a budget.

Hypothesis shrinks every failing test until its example is minimal. On a
codec with many bugs that is most of the suite (200 failing tests for SGLang
0.5.23), each shrunk for up to five minutes: the verdict took hours. This
plugin keeps the part of shrinking a maintainer needs, one readable example
per bug, and drops the rest:

1. The suite's Hypothesis profiles stop generating at a test's first failing
   example (``report_multiple_bugs=False``). That example is deterministic
   under ``ci``, and so is the set of failing tests.
2. The first failing example's signature (:mod:`conformance.failures`: the
   property, the reason and the path shape, numbers folded) is *claimed* in a
   registry shared by the whole run (one file per signature, in a directory
   every xdist worker sees). The test that claims it shrinks it; every other
   test with the same signature stops at once and reports its first failing
   example with the id of the test that shrinks it.
3. Shrinking a claimed failure stops after ``calls`` calls of the test or
   ``seconds`` seconds, whichever comes first, and no process spends more than
   ``total_seconds`` shrinking in all. A failure stopped that way is reported
   with the smallest failing example found so far, and says so.

Under xdist the order in which workers meet failures decides which test of a
signature shrinks it; the failing tests, their headlines and the verdict do
not depend on it.

Budgets by profile (``--shrink-calls``, ``--shrink-seconds`` and
``--shrink-total-seconds`` override them; ``0`` calls turns shrinking off):
see :data:`BUDGETS`.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import pytest
from hypothesis.errors import HypothesisException

from .. import draws
from ..failures import NO_MESSAGE, PropertyFailure, exception_headline, exception_signature
from .selection import short_id

__all__ = ["ShrinkBudget", "BUDGETS", "ShrinkOutcome", "SHRINK_OUTCOME", "SHRINK_BUDGET", "failure_signature", "failure_headline"]


@dataclass(frozen=True)
class ShrinkBudget:
    """How much shrinking a run may do.

    ``calls`` and ``seconds`` bound the shrinking of one distinct failure,
    ``total_seconds`` all shrinking done by one process (an xdist worker).
    ``math.inf`` leaves a bound to Hypothesis (which stops a test's shrinking
    after 500 successful shrinks or five minutes).
    """

    calls: float
    seconds: float
    total_seconds: float

    def describe(self) -> str:
        if self.calls == 0:
            return "shrinking off"

        def amount(x: float, unit: str) -> str:
            return "unbounded" if math.isinf(x) else f"{x:g}{unit}"

        return (
            f"one shrink per distinct failure, at most {amount(self.calls, ' calls')} or "
            f"{amount(self.seconds, ' s')} each, {amount(self.total_seconds, ' s')} per process in all"
        )

    def as_dict(self) -> Dict[str, Any]:
        return {k: (None if math.isinf(v) else v) for k, v in (("calls", self.calls), ("seconds", self.seconds), ("total_seconds", self.total_seconds))}


#: The default budget of each profile of :mod:`strategies.profiles`.
BUDGETS: Dict[str, ShrinkBudget] = {
    "ci": ShrinkBudget(calls=150, seconds=4.0, total_seconds=60.0),
    "dev": ShrinkBudget(calls=500, seconds=20.0, total_seconds=300.0),
    "nightly": ShrinkBudget(calls=math.inf, seconds=math.inf, total_seconds=math.inf),
}

#: The budget a run uses (``config.stash[SHRINK_BUDGET]``).
SHRINK_BUDGET = pytest.StashKey[ShrinkBudget]()


@dataclass
class ShrinkOutcome:
    """What shrinking did for one failing test (``item.stash[SHRINK_OUTCOME]``)."""

    signature: str
    #: The exception of the first failing example (its headline is the failure's).
    first: BaseException
    #: "shrunk", "partly shrunk", "not shrunk"
    status: str
    detail: str
    calls: int = 0
    seconds: float = 0.0
    #: The test that shrinks this failure (itself unless another test claimed it first).
    shrunk_in: str = ""
    #: The message of the example reported (the smallest failing one seen), or None.
    message: Any = None

    def describe(self) -> str:
        return f"{self.status} ({self.detail})" if self.detail else self.status


SHRINK_OUTCOME = pytest.StashKey[ShrinkOutcome]()


def failure_signature(exc: BaseException) -> str:
    """The signature of a failure (:class:`PropertyFailure`) or of any other exception a test raised."""
    if isinstance(exc, PropertyFailure):
        return exc.signature
    return exception_signature(exc)


def failure_headline(exc: BaseException, codec: str = "") -> str:
    """The headline of a failure, or ``[codec] raised Type: message`` for any other exception."""
    if isinstance(exc, PropertyFailure):
        return exc.headline
    return exception_headline(exc, codec)


class _StopShrinking(BaseException):
    """Raised inside Hypothesis to end a test's run; not an ``Exception``, so Hypothesis does not shrink it."""


@dataclass
class _Seen:
    exc: BaseException
    message: Any
    signature: str


@dataclass
class _TestState:
    nodeid: str
    first: Optional[_Seen] = None
    best: Optional[_Seen] = None
    owner: str = ""
    shrink_calls: int = 0
    shrink_started: float = 0.0
    shrink_ended: float = 0.0
    stopped: str = ""


class _Claims:
    """Signatures claimed by the tests of one run, as files in a directory shared by all its processes."""

    def __init__(self, directory: str):
        self.directory = directory

    def claim(self, signature: str, nodeid: str) -> str:
        """Claim ``signature`` for ``nodeid``; returns the node id of whoever holds it (``nodeid`` if now us)."""
        path = os.path.join(self.directory, hashlib.sha1(signature.encode("utf-8", "surrogatepass")).hexdigest())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            for _ in range(200):  # the claimant may still be writing its id
                with open(path, encoding="utf-8") as fh:
                    owner = fh.read()
                if owner:
                    return owner
                time.sleep(0.005)
            return "another test"
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(nodeid)
        return nodeid


_DIR_KEY = "conformance_shrink_claims"


class _LastDrawn(threading.local):
    """The message the running property call drew last (``NO_MESSAGE`` before its first draw)."""

    def __init__(self) -> None:
        self.message: Any = NO_MESSAGE

    def __call__(self, message: Any) -> None:
        self.message = message


class ShrinkBudgetPlugin:
    def __init__(self, config: pytest.Config, budget: ShrinkBudget):
        self.config = config
        self.drawn = _LastDrawn()
        self.stop_observing = draws.observe(self.drawn)
        self.budget = budget
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and _DIR_KEY in workerinput:
            self.directory, self.owns_directory = workerinput[_DIR_KEY], False
        else:
            self.directory, self.owns_directory = tempfile.mkdtemp(prefix="conformance-shrink-"), True
        self.claims = _Claims(self.directory)
        self.spent = 0.0  # seconds this process has shrunk

    # --- xdist: every worker shares the controller's registry -----------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput[_DIR_KEY] = self.directory

    def pytest_unconfigure(self, config):
        self.stop_observing()
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    # --- around each Hypothesis test -------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        if handle is None:
            return (yield)
        inner = handle.inner_test
        state = _TestState(item.nodeid)
        handle.inner_test = self._wrap(inner, state)
        try:
            return (yield)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:
            if not state.stopped or state.best is None:
                raise
            # We ended the run. Hypothesis may report our abort as its own error
            # (a test case that drew less than before looks like flaky data
            # generation); the failure to report is the example we kept.
            raise state.best.exc from None
        finally:
            handle.inner_test = inner
            if state.shrink_started:
                self.spent += (state.shrink_ended or time.monotonic()) - state.shrink_started
            if state.first is not None:
                item.stash[SHRINK_OUTCOME] = self._outcome(state, state.first)

    def _wrap(self, inner: Callable, state: _TestState) -> Callable:
        budget = self.budget

        @functools.wraps(inner)
        def call(*args, **kwargs):
            if state.first is not None:  # every call after the first failure is a shrink step
                state.shrink_calls += 1
                now = time.monotonic()
                if state.shrink_calls > budget.calls:
                    state.stopped = f"budget of {budget.calls:g} calls spent"
                elif now - state.shrink_started > budget.seconds:
                    state.stopped = f"budget of {budget.seconds:g} s spent"
                elif self.spent + (now - state.shrink_started) > budget.total_seconds:
                    state.stopped = f"the run's shrink budget of {budget.total_seconds:g} s per process is spent"
                if state.stopped:
                    state.shrink_ended = now
                    raise _StopShrinking
            self.drawn.message = NO_MESSAGE
            try:
                return inner(*args, **kwargs)
            except HypothesisException:
                raise  # assume(), health checks: Hypothesis' own control flow
            except Exception as exc:
                seen = _Seen(exc, self.drawn.message, failure_signature(exc))
                state.best = seen
                if state.first is None:
                    state.first = seen
                    state.owner = self.claims.claim(seen.signature, state.nodeid)
                    if state.owner != state.nodeid:
                        state.stopped = "elsewhere"
                    elif budget.calls == 0:
                        state.stopped = "shrinking is off"
                    elif self.spent >= budget.total_seconds:
                        state.stopped = f"the run's shrink budget of {budget.total_seconds:g} s per process is spent"
                    if state.stopped:
                        raise _StopShrinking from None
                    state.shrink_started = time.monotonic()
                raise

        return call

    def _outcome(self, state: _TestState, first: _Seen) -> ShrinkOutcome:
        seconds = ((state.shrink_ended or time.monotonic()) - state.shrink_started) if state.shrink_started else 0.0
        if state.stopped == "elsewhere":
            status, detail = "not shrunk", f"first failing example; the same failure is shrunk in {short_id(state.owner)}"
        elif state.stopped and not state.shrink_started:
            status, detail = "not shrunk", f"first failing example; {state.stopped}"
        elif state.stopped:
            status, detail = "partly shrunk", f"{state.shrink_calls - 1} calls, {seconds:.1f} s; {state.stopped}"
        else:
            status, detail = "shrunk", f"{state.shrink_calls} calls, {seconds:.1f} s"
        message = state.best.message if state.best is not None and state.best.message is not NO_MESSAGE else None
        return ShrinkOutcome(first.signature, first.exc, status, detail, state.shrink_calls, round(seconds, 3), state.owner, message)


def _parse_amount(text: str) -> float:
    value = float(text)
    if value < 0 or math.isnan(value):
        raise ValueError(text)
    return value


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption("--shrink-calls", type=_parse_amount, default=None, help="test calls spent shrinking one distinct failure (0: no shrinking; inf: Hypothesis' own limit); default by profile")
    group.addoption("--shrink-seconds", type=_parse_amount, default=None, help="seconds spent shrinking one distinct failure; default by profile")
    group.addoption("--shrink-total-seconds", type=_parse_amount, default=None, help="seconds one process spends shrinking in all; default by profile")


def budget_for(config: pytest.Config, profile: str) -> ShrinkBudget:
    """The profile's budget with the command line's overrides."""
    base = BUDGETS.get(profile, BUDGETS["dev"])
    return ShrinkBudget(
        calls=_option(config, "shrink_calls", base.calls),
        seconds=_option(config, "shrink_seconds", base.seconds),
        total_seconds=_option(config, "shrink_total_seconds", base.total_seconds),
    )


def _option(config: pytest.Config, name: str, default: float) -> float:
    value = config.getoption(name, None)
    return default if value is None else value


def install(config: pytest.Config, profile: str) -> ShrinkBudget:
    """Register the plugin for this run (the suite's conftest calls it once the profile is loaded)."""
    budget = budget_for(config, profile)
    config.stash[SHRINK_BUDGET] = budget
    if not config.pluginmanager.has_plugin("conformance-shrink-budget"):
        config.pluginmanager.register(ShrinkBudgetPlugin(config, budget), "conformance-shrink-budget")
    return budget
