"""Hypothesis profiles for this suite: ``ci``, ``dev`` (the default) and ``nightly``.

A runner calls :func:`load_profile`, which registers the three and loads one
(importing :mod:`strategies` loads none):

* ``$HYPOTHESIS_PROFILE`` when it is set (any registered profile name);
* otherwise ``ci`` when ``$CI`` is ``true`` (as CI services set it);
* otherwise ``dev``.

``ci``       deterministic (``derandomize=True``), bounded examples
             (:data:`CI_MAX_EXAMPLES` per test for the strategies' own tests;
             the conformance suite uses its ``ci-suite`` variant, 8 per
             property and message type, see ``conformance/suite/conftest.py``),
             no example database (nothing written to ``.hypothesis/``), no
             deadline, no targeting phase. A failure prints its reproduction blob.
``dev``      Hypothesis' defaults with a local example database, no deadline.
``nightly``  many examples, every phase including targeting: properties that
             call :func:`strategies.target_size` steer generation toward large
             and deeply nested messages; large batches go up to 256 requests.

Loading a profile also empties Hypothesis' pool of *local constants*
(:func:`without_local_constants`), so that what a test draws does not depend
on which of the project's modules happen to be imported.

Every profile sets ``deadline=None``: tensor construction (and the first call
into torch, which initialises its kernels) varies by tens of milliseconds
between runs, which a deadline would report as flaky. No health check is
suppressed.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

from hypothesis import Phase, settings
from hypothesis.errors import InvalidArgument

__all__ = [
    "PROFILES",
    "CI_MAX_EXAMPLES",
    "NIGHTLY_MAX_EXAMPLES",
    "register_profiles",
    "profile_from_environment",
    "load_profile",
    "current_profile",
    "large_batch_limit",
    "without_local_constants",
]

PROFILES = ("ci", "dev", "nightly")
CI_MAX_EXAMPLES = 30
NIGHTLY_MAX_EXAMPLES = 2000
#: Largest "large" batch drawn under each profile (others: the ``dev`` value).
_LARGE_BATCH = {"ci": 64, "dev": 64, "nightly": 256}
_TRUE = frozenset({"true", "1", "yes"})


def register_profiles() -> None:
    """(Re-)register ``ci``, ``dev`` and ``nightly``; safe to call more than once.

    Each is built on Hypothesis' ``default`` profile explicitly, never on
    whatever profile happens to be loaded (Hypothesis itself loads a ``ci``
    profile that suppresses a health check when ``$CI`` is set).
    """
    base = settings.get_profile("default")
    settings.register_profile(
        "ci",
        base,
        max_examples=CI_MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=True,
        phases=(Phase.explicit, Phase.generate, Phase.shrink, Phase.explain),
        suppress_health_check=(),
    )
    settings.register_profile("dev", base, deadline=None, suppress_health_check=())
    settings.register_profile(
        "nightly",
        base,
        max_examples=NIGHTLY_MAX_EXAMPLES,
        deadline=None,
        phases=tuple(Phase),
        suppress_health_check=(),
    )


def profile_from_environment(environ: Optional[Mapping[str, str]] = None) -> str:
    """The profile name the environment selects (see the module docstring); loads nothing."""
    env = os.environ if environ is None else environ
    chosen = env.get("HYPOTHESIS_PROFILE", "").strip()
    if chosen:
        return chosen
    return "ci" if env.get("CI", "").strip().lower() in _TRUE else "dev"


def without_local_constants() -> None:
    """Stop Hypothesis from mixing constants of *local* source files into generated values.

    Hypothesis (6.131 and later) collects the literals of the modules it deems
    local as they get imported, and now and then draws one of them. Which
    modules are local differs between a source checkout and an installed
    wheel, and which are imported yet differs with the tests selected, so one
    conformance test drew other messages in a full run, alone (its
    ``reproduce:`` line) and under tox: which tests failed depended on where
    and with what they ran. Hypothesis has no setting for it; this empties
    the pool through its provider module (its global constants, the same
    everywhere, stay). A no-op on a Hypothesis without the pool.
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the module
        return
    if getattr(providers, "_get_local_constants", None) is None:
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty


def load_profile(environ: Optional[Mapping[str, str]] = None) -> str:
    """Load the profile the environment selects and return its name.

    Raises ``InvalidArgument`` naming ``HYPOTHESIS_PROFILE`` when it names a
    profile nobody registered.
    """
    register_profiles()
    name = profile_from_environment(environ)
    try:
        settings.get_profile(name)
    except InvalidArgument:
        raise InvalidArgument(
            f"HYPOTHESIS_PROFILE={name!r} is not a registered profile (this suite registers {', '.join(PROFILES)})"
        ) from None
    settings.load_profile(name)
    without_local_constants()
    return name


def current_profile() -> Optional[str]:
    """The name of the loaded Hypothesis profile."""
    return settings.get_current_profile_name()


def large_batch_limit() -> int:
    """The largest batch size drawn now: 256 under ``nightly``, 64 otherwise."""
    return _LARGE_BATCH.get(current_profile() or "dev", _LARGE_BATCH["dev"])
