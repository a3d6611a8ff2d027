"""The installed SGLang's messages as Hypothesis strategies: the generic builder over SGLang's own classes, with SGLang's field meanings.

* **Classes**: the installed release's (:func:`.installed.message_types`),
  so a release or a development build that adds a message or a field is
  drawn without an edit here.
* **Meanings**: the reference schema's domain pack (:mod:`strategies.reference`:
  logprob rows with ``None``, ragged batches, ``[[]]`` chunks, multimodal
  features by modality, ...), which is SGLang's: its factories look at a
  field's name *and* its type, and decline when a release declares the field
  otherwise, so the pack applies to any release whose fields carry the same
  meaning and falls back to the type elsewhere. The batch field is ``rids``;
  untyped values (``Any``) hold, among their leaves, members of the enums the
  release's messages declare.
* **Opaque fields**: a ``PickleWrapper`` holds what SGLang's senders put in
  one (``wrap_as_pickle``): the pickle of a value, never arbitrary bytes.
* **Constructors**: every message is built by SGLang's own classes, so what
  their ``__post_init__`` normalises is what the suite sends and expects
  back; a draw a constructor refuses is not drawn (counted per class in
  :data:`REFUSED`, and a Hypothesis event), as an SGLang sender could never
  hold it.

Imports SGLang only when a strategy is built.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any, Dict, Tuple

__all__ = ["REFUSED", "message_strategy", "CONSTRUCTOR_ERRORS"]

#: What SGLang's constructors raise for a combination the types allow and their ``__post_init__`` does not.
CONSTRUCTOR_ERRORS: Tuple[type, ...] = (ValueError, TypeError, AssertionError, RuntimeError, IndexError, KeyError, AttributeError)

#: Draws each message class's constructors refused, by class (for the test that keeps the draws honest).
REFUSED: Dict[type, int] = {}


@functools.lru_cache(maxsize=None)
def _options() -> Dict[str, Any]:
    from strategies.reference import BATCH_FIELD, REGISTRY
    from strategies.untyped import untyped_values

    from .installed import enum_types, io_struct, message_types

    io = io_struct()
    untyped = untyped_values(enums=enum_types(message_types()))
    overrides: Dict[Any, Any] = {}
    wrapper = getattr(io, "PickleWrapper", None)
    if wrapper is not None:
        # What wrap_as_pickle puts there: SGLang's receivers unpickle it (unwrap_from_pickle).
        overrides[wrapper] = untyped.map(lambda value: wrapper(pickle.dumps(value)))
    return {"overrides": overrides, "registry": REGISTRY, "batch_field": BATCH_FIELD, "untyped": untyped}


@functools.lru_cache(maxsize=None)
def message_strategy(cls: type):
    """Valid messages of the installed SGLang's class ``cls``, as SGLang's constructors build them (module docstring)."""
    import hypothesis
    import hypothesis.strategies as st

    from strategies import from_struct

    options = dict(_options())
    inner = from_struct(cls, dict(options.pop("overrides")), **options)

    @st.composite
    def built_by_sglang(draw):
        try:
            return draw(inner)
        except CONSTRUCTOR_ERRORS as exc:
            REFUSED[cls] = REFUSED.get(cls, 0) + 1
            hypothesis.event(f"not drawn: SGLang's constructors refuse it ({type(exc).__qualname__})")
            hypothesis.reject()

    return built_by_sglang()
