"""Engines: what the suite needs to know about one engine's IPC wire, one package per engine.

The properties, the fuzz harness and the plug-in door are generic; an
:class:`~conformance.engines.profile.Engine` tells them the engine's message
types, how a frame's type is known, how to draw its messages, its built-in
codecs, its pickle baseline, its wire reference and its golden vectors.

Select one with ``python -m conformance --engine NAME`` (or
``$IPC_CONFORMANCE_ENGINE``); :mod:`.default` names the default. ``NAME`` is a
key of :data:`~conformance.engines.profile.ENGINES`, which holds every
subpackage of this package (``reference/``: the reference schema, the
default; ``sglang/``, ``vllm/``: the installed engine's own classes and codec,
strategies, failure lists, findings), or ``MODULE:ATTR`` naming an ``Engine``
object, so a third engine (an in-house gateway's schema) is one module outside
this package, or a new subpackage here: no list to edit.
"""

from .profile import (
    DEFAULT_ENGINE,
    ENGINE_ENV,
    ENGINES,
    Engine,
    EngineSelectionError,
    FamilyNotInRelease,
    MessageFamily,
    Release,
    VectorValueUnavailable,
    engine_from_environment,
    engine_named_by,
    engine_spec_from_environment,
    family_absent,
    family_roots,
    find_engine,
    installed_version,
    load_engine,
)

__all__ = [
    "Engine",
    "MessageFamily",
    "Release",
    "ENGINES",
    "ENGINE_ENV",
    "DEFAULT_ENGINE",
    "EngineSelectionError",
    "FamilyNotInRelease",
    "VectorValueUnavailable",
    "family_absent",
    "family_roots",
    "installed_version",
    "load_engine",
    "find_engine",
    "engine_from_environment",
    "engine_spec_from_environment",
    "engine_named_by",
]
