"""The reference schema's messages as strategies, and their ``st.from_type`` registration.

After :func:`register_type_strategies`, ``hypothesis.strategies.from_type(T)``
draws through :func:`strategies.reference.reference_struct` (``from_struct``
with the reference schema's meanings) for every ``T`` in ``MESSAGE_TYPES`` and
``NESTED_TYPES``, for ``Int128`` and for
the two roots ``BaseReq``/``BaseBatchReq`` (any message deriving from them).
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

from reference_codec.schema import MESSAGE_TYPES, NESTED_TYPES, BaseBatchReq, BaseReq, Int128

from ._public import named_composite
from .reference import reference_struct
from .values import int128s

__all__ = ["message_types", "messages", "register_type_strategies"]


def message_types(root: Optional[type] = None) -> Tuple[type, ...]:
    """Every message class of the schema, by wire tag; only those deriving from ``root`` if given."""
    return tuple(cls for cls in MESSAGE_TYPES.values() if root is None or issubclass(cls, root))


@named_composite("messages")
def _messages(draw, types: Optional[Tuple[type, ...]] = None):
    types = message_types() if types is None else types
    cls = draw(st.sampled_from(types))
    return draw(reference_struct(cls))


def messages(types: Optional[Sequence[type]] = None) -> st.SearchStrategy:
    """Messages of any of ``types`` (default: every ``MESSAGE_TYPES`` class), each via ``reference_struct``.

    Shrinks toward the message with the fewest and simplest choices (a
    field-less one such as ``HealthCheckOutput``), ties going to the earlier
    wire tag, then as :func:`strategies.from_struct` describes.
    """
    if types is None:
        return _ALL_MESSAGES
    else:
        chosen = tuple(types)
        if not chosen:
            raise InvalidArgument("types must not be empty")
        unknown = [t for t in chosen if t not in MESSAGE_TYPES.values()]
        if unknown:
            raise InvalidArgument(f"types has {unknown!r}, which are not in MESSAGE_TYPES; use from_struct for other classes")
    return _messages(types=chosen)


_ALL_MESSAGES = _messages()


def register_type_strategies() -> None:
    """Make ``st.from_type`` use this package for every schema type (idempotent)."""
    for cls in (*MESSAGE_TYPES.values(), *NESTED_TYPES):
        st.register_type_strategy(cls, reference_struct(cls))
    st.register_type_strategy(Int128, int128s())
    st.register_type_strategy(BaseReq, messages(message_types(BaseReq)))
    st.register_type_strategy(BaseBatchReq, messages(message_types(BaseBatchReq)))
