"""Fixtures of the conformance suite: the implementation under test and the baselines; the suite's budget.

The suite runs every property once per message type (about 1,000 tests), so
each Hypothesis profile gets a suite variant (``ci-suite``, ``dev-suite``,
``nightly-suite``):

* ``ci``: :data:`SUITE_CI_EXAMPLES` derandomized examples per (property,
  message type), where the strategies' own tests use 30: at 30 the suite
  alone would take CI past its time bound.
* every profile: a test stops generating at its first failing example
  (``report_multiple_bugs=False``) and has no ``explain`` phase; shrinking is
  budgeted by :mod:`conformance.runner.shrinking`. Together these bound the time to
  a complete verdict on an implementation that fails many tests.
"""

from __future__ import annotations

import pytest

from conformance.plugin import CodecSelectionError, codec_from_environment
from conformance.properties import ENGINE
from conformance.runner import shrinking

pytest_plugins = ("conformance.runner.variant_coverage", "conformance.runner.shrinking", "conformance.runner.report", "conformance.runner.failure_list", "conformance.runner.seeding")

#: Examples per (property, message type) under the ``ci`` profile.
SUITE_CI_EXAMPLES = 8


def suite_profile_name(base: str) -> str:
    return f"{base}-suite"


def pytest_addoption(parser):
    group = parser.getgroup("conformance")
    group.addoption(
        "--against-release",
        default=None,
        help="the release (a version the engine has a snapshot of, or a snapshot file) whose wire the installed engine is compared with; "
        "default: the newest snapshot of an older release; 'none': no comparison (test_release_wire.py)",
    )


def pytest_configure(config):
    # complex32 is a fixed-layout dtype the wire must carry; torch warns on every
    # allocation of it, which says nothing about the codec under test.
    config.addinivalue_line("filterwarnings", "ignore:ComplexHalf support is experimental:UserWarning")
    from hypothesis import Phase, settings

    import strategies

    if not (strategies.profiles.current_profile() or "").endswith("-suite"):
        strategies.load_profile()
    base = strategies.profiles.current_profile() or "dev"
    if base.endswith("-suite"):  # loaded already (a second configure in one process)
        base = base[: -len("-suite")]
    else:
        changes = dict(report_multiple_bugs=False, phases=tuple(p for p in settings.get_profile(base).phases if p is not Phase.explain))
        if base == "ci":
            changes["max_examples"] = SUITE_CI_EXAMPLES
        settings.register_profile(suite_profile_name(base), settings.get_profile(base), **changes)
        settings.load_profile(suite_profile_name(base))
    shrinking.install(config, base)


@pytest.fixture(scope="session")
def codec():
    """The implementation under test (``--codec``/``--testee``); the run stops if none is selected."""
    try:
        selected = codec_from_environment()
    except CodecSelectionError as exc:
        pytest.exit(str(exc), returncode=2)
    yield selected
    close = getattr(selected.impl, "close", None)
    if callable(close):
        close()


@pytest.fixture(scope="session")
def engine():
    """The engine whose messages the suite draws (``--engine``)."""
    return ENGINE


@pytest.fixture(scope="session")
def pickle_baseline():
    return ENGINE.pickle_baseline()
