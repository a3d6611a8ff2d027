"""The semantic registry: field name -> strategy factory.

Types say that ``output_top_logprobs_idx`` is a nested list of optional ints;
only its name says that it must have the shape of ``output_top_logprobs_val``.
A *factory* captures that meaning. It is registered under a field name or an
``fnmatch`` glob (``"*_logprobs_val"``) and called with the
:class:`~strategies.builder.FieldContext` of the field being drawn: its
declared type, the struct it belongs to, the values of the sibling fields drawn
before it and the batch size. It returns a strategy for the field's value, or
``None`` to decline (for example when another implementation's struct has a
field of the same name but a different type), in which case the next factory
is asked and finally the type-driven default is used.

Lookup order for a name: exact registrations, then globs; within each, the
most recent registration first, so a registry copy can override a default.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Tuple

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

if TYPE_CHECKING:
    from .builder import FieldContext

__all__ = ["FieldFactory", "SemanticRegistry"]

#: ``factory(ctx) -> strategy | None``; see the module docstring.
FieldFactory = Callable[["FieldContext"], Optional[st.SearchStrategy]]

_GLOB_CHARS = frozenset("*?[")


class SemanticRegistry:
    """A mutable mapping of field-name patterns to :data:`FieldFactory` lists."""

    def __init__(self) -> None:
        self._exact: Dict[str, List[FieldFactory]] = {}
        self._globs: List[Tuple[str, FieldFactory]] = []
        self._cache: Dict[str, Tuple[FieldFactory, ...]] = {}

    def register(self, pattern: str, factory: Optional[FieldFactory] = None):
        """Register ``factory`` for field names matching ``pattern``; usable as a decorator.

        ``pattern`` is an exact field name or an ``fnmatch`` glob. Returns the
        factory, so ``@registry.register("finished_reasons")`` leaves the
        decorated function usable by itself.
        """
        if not isinstance(pattern, str) or not pattern:
            raise InvalidArgument(f"pattern must be a non-empty str, got {pattern!r}")
        if factory is None:
            return lambda f: self.register(pattern, f)
        if not callable(factory):
            raise InvalidArgument(f"factory must be callable as factory(ctx), got {factory!r}")
        if _GLOB_CHARS & set(pattern):
            self._globs.insert(0, (pattern, factory))
        else:
            self._exact.setdefault(pattern, []).insert(0, factory)
        self._cache.clear()
        return factory

    def factories_for(self, name: str) -> Tuple[FieldFactory, ...]:
        """The factories to ask, in order, for a field called ``name``."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        found = tuple(self._exact.get(name, ())) + tuple(f for p, f in self._globs if fnmatch.fnmatchcase(name, p))
        self._cache[name] = found
        return found

    def patterns(self) -> Iterator[str]:
        """Every registered pattern, exact names first."""
        yield from self._exact
        yield from dict.fromkeys(p for p, _ in reversed(self._globs))

    def copy(self) -> "SemanticRegistry":
        """An independent registry with the same entries, to extend or override."""
        new = SemanticRegistry()
        new._exact = {k: list(v) for k, v in self._exact.items()}
        new._globs = list(self._globs)
        return new

    def __len__(self) -> int:
        return sum(map(len, self._exact.values())) + len(self._globs)

    def __repr__(self) -> str:
        shown = list(self.patterns())
        return f"SemanticRegistry({', '.join(map(repr, shown))})"

