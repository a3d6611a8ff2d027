"""Fixtures of the conformance suite: the implementation under test and the baselines."""

from __future__ import annotations

import pytest

from conformance.plugin import CodecSelectionError, codec_from_environment

#: Examples per (property, message type) under the ``ci`` profile.
SUITE_CI_EXAMPLES = 8
from reference_codec import PickleCodec, ReferenceCodec


def pytest_configure(config):
    # complex32 is a fixed-layout dtype the wire must carry; torch warns on every
    # allocation of it, which says nothing about the codec under test.
    config.addinivalue_line("filterwarnings", "ignore:ComplexHalf support is experimental:UserWarning")
    import strategies  # loads the Hypothesis profile the environment selects
    from hypothesis import settings

    if strategies.profiles.current_profile() == "ci":
        # The suite runs every property once per message type (100 types x ~8
        # properties); the strategies' own ci budget per test would take CI past
        # its time bound, so the suite draws fewer examples per (property, type).
        settings.register_profile("ci-suite", settings.get_profile("ci"), max_examples=SUITE_CI_EXAMPLES)
        settings.load_profile("ci-suite")


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
def reference():
    return ReferenceCodec()


@pytest.fixture(scope="session")
def pickle_baseline():
    return PickleCodec()
