"""The reference schema's meanings, which mirror SGLang's messages, as one opt-in set of options.

The generic builder (:func:`strategies.from_struct`,
:func:`strategies.from_annotation`) knows no schema: by default it asks no
registry, treats no field as a batch and draws untyped values with no enum
members. This module is the reference schema's domain pack, as Hypothesis
keeps domain packs in ``hypothesis.extra``: its field meanings
(:data:`REGISTRY`, filled by :func:`strategies.semantic.register_defaults`),
its batch field (``"rids"``) and its untyped values (:data:`UNTYPED`, whose
leaves include the members of its ``ENUM_TYPES``), gathered in
:data:`OPTIONS`. Everything that draws the reference schema's messages
(:func:`strategies.messages`, ``st.from_type`` after
:func:`strategies.register_type_strategies`, the coverage report) uses it.

Importing this module builds these values and mutates nothing outside it.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import hypothesis.strategies as st

from reference_codec.schema import ENUM_TYPES

from .builder import from_struct
from .registry import SemanticRegistry
from .semantic import register_defaults
from .untyped import untyped_values

__all__ = ["REGISTRY", "BATCH_FIELD", "UNTYPED", "OPTIONS", "reference_struct"]

#: The reference schema's field meanings (see :mod:`strategies.semantic`).
#: Copy it (``REGISTRY.copy()``) before registering more.
REGISTRY: SemanticRegistry = register_defaults(SemanticRegistry())

#: The field whose presence makes a reference-schema struct a batch.
BATCH_FIELD = "rids"

#: Untyped (``Any``) values whose leaves include the reference schema's enum members.
UNTYPED: st.SearchStrategy = untyped_values(enums=ENUM_TYPES)

#: Keyword arguments of :func:`strategies.from_struct` that give the reference schema's meanings.
OPTIONS: Dict[str, Any] = {"registry": REGISTRY, "batch_field": BATCH_FIELD, "untyped": UNTYPED}


def reference_struct(cls: type, overrides: Optional[Mapping[Any, Any]] = None, **kw: Any) -> st.SearchStrategy:
    """:func:`strategies.from_struct` with :data:`OPTIONS`; keywords in ``kw`` take precedence."""
    return from_struct(cls, overrides, **{**OPTIONS, **kw})
