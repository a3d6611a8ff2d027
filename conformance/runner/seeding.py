"""Examples that depend on the test, not on its source text: each property is seeded from its test id.

Hypothesis' ``derandomize`` seeds a test from a digest of the test function's
source, so any edit to a property's body (a comment, a renamed variable)
re-draws its examples, and every engine's failure list would have to be
regenerated with each release of the suite. Here, under a deterministic
profile (``ci``) or when ``--seed N`` is given, every Hypothesis test is
seeded with ``sha256("N:" + test id)``, the test id without directories
(``test_roundtrip.py::test_decode_of_encode_is_equivalent_to_the_message[AbortReq]``).
``N`` is 0 unless ``--seed`` says otherwise.

What still re-draws a test's examples: another ``--seed``, another test id
(a renamed property, file or message type), another number of examples, a
change to what the property draws (its strategies, the schema, the order of
its ``data.draw`` calls) and another Hypothesis release. What does not: an
edit of the property's code that leaves its draws as they were, another
machine, another torch build, running it alone or in the whole suite.
"""

from __future__ import annotations

import hashlib
import os
from typing import Optional

import pytest

from .selection import short_id

__all__ = ["DEFAULT_SEED", "SEED_ENV", "seed_for", "run_seed"]

DEFAULT_SEED = 0
SEED_ENV = "IPC_CONFORMANCE_SEED"
_SEED = pytest.StashKey[Optional[int]]()


def seed_for(test_id: str, seed: int = DEFAULT_SEED) -> int:
    """The Hypothesis seed of the test ``test_id`` (a node id without directories) under run seed ``seed``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{test_id}".encode("utf-8", "surrogatepass")).digest()[:16], "big")


def run_seed(config: pytest.Config) -> Optional[int]:
    """The run's seed: ``--seed`` (or ``$IPC_CONFORMANCE_SEED``) when given, else :data:`DEFAULT_SEED` under a
    deterministic profile (``derandomize``, as ``ci``), else ``None`` (random draws, as ``dev``)."""
    seed = config.stash.get(_SEED, None)
    if seed is not None:
        return seed
    from hypothesis import settings

    default = settings.default
    assert default is not None  # None only while hypothesis is still importing; it loads a profile on import
    return DEFAULT_SEED if default.derandomize else None


def _parse_seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption(
        "--seed",
        dest="conformance_seed",
        type=_parse_seed,
        default=None,
        help=f"seed every property from its test id and this number (default {DEFAULT_SEED} under the ci profile; ${SEED_ENV})",
    )


def pytest_configure(config):
    seed = config.getoption("conformance_seed", None)
    if seed is None and os.environ.get(SEED_ENV, "").strip():
        seed = _parse_seed(os.environ[SEED_ENV])
    config.stash[_SEED] = seed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    seed = run_seed(item.config)
    obj = getattr(item, "obj", None)
    if seed is None or getattr(obj, "hypothesis", None) is None:
        return (yield)
    # Read by Hypothesis when the test starts; one process runs one test at a
    # time, so setting it on the (shared) function just before is enough.
    obj._hypothesis_internal_use_seed = seed_for(short_id(item.nodeid), seed)
    try:
        return (yield)
    finally:
        obj._hypothesis_internal_use_seed = None
