"""Strategies for any msgspec type, built from ``msgspec.inspect.type_info``.

``hypothesis.strategies.from_type`` on a msgspec Struct ignores
``msgspec.Meta`` constraints and draws integers msgpack cannot carry. This
builder reads the inspected type instead and honours:

* integer bounds (``ge``/``gt``/``le``/``lt``/``multiple_of``), plus the upper
  bound ``UInt64`` carries in ``Meta(extra={"max": ...})``; an unbounded side
  is the int64 limit, so every integer fits a msgpack int;
* float bounds, string/bytes/collection ``min_length``/``max_length`` and
  string ``pattern``;
* ``Literal``, ``Enum``, ``Optional`` and unions (``None`` first, so failures
  shrink toward ``None``), dict key types, sets, fixed and variadic tuples,
  nested, tagged and array-like structs, TypedDicts, dataclasses, NamedTuples
  (the latter two field by field, as structs, at the root too; a dataclass's
  ``init=False`` fields are left to the class), msgspec's
  datetime/UUID/Decimal/Ext/Raw types;
* custom types: ``array.array``, ``torch.Tensor``, ``numpy.ndarray``,
  :class:`~reference_codec.schema.Int128` (full 128-bit range); any other
  custom class needs a class override (``overrides={Cls: strategy}``) or a
  strategy registered with ``st.register_type_strategy``;
* ``object``/``Any``: the ``untyped`` strategy (default
  :func:`~strategies.untyped.untyped_values`), except that keys of untyped
  dicts and items of untyped sets are hashable
  :func:`~strategies.untyped.untyped_keys`;
* defaults: a field with a default is left unset an eighth of the time.

``overrides`` replace the type-driven strategy by field name, by dotted path
into nested structs (``"utility_output.result"``) or by class, anywhere in the
message (see :func:`from_struct`).

Two things the types cannot say come from options, which default to no
schema's meaning (the reference schema's are the opt-in pack
:mod:`strategies.reference`):

* *batches*: in a struct with a ``batch_field`` field (the reference schema's
  is ``rids``), every list-typed field is a per-request parallel list as long
  as the batch (see :mod:`strategies.batches`);
* *meaning*: a :class:`~strategies.registry.SemanticRegistry` supplies a
  strategy by field name (see :mod:`strategies.semantic`).

``PickleWrapper`` (SGLang's opaque pickle carrier) is left out of unions unless
``pickle_wrappers=True``: the reference codec refuses to unpickle by default,
so a default message must not hold one.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import functools
import math
import pickle
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import hypothesis.strategies as st
import msgspec
import numpy as np
import torch
from hypothesis.errors import InvalidArgument, ResolutionFailed
from msgspec import inspect as mi

from reference_codec.schema import INT64_MAX, INT64_MIN, UINT64_MAX, Int128
from reference_codec.type_tree import (
    MAPPING_TYPES,
    STRUCT_TYPES,
    MappingType,
    StructLike,
    children,
    is_set,
    is_untyped,
    struct_info,
    structs_under,
    type_info,
    unwrap,
)

from ._draws import one_in as one_in_draws
from ._draws import or_none, union
from ._public import check_bool, named_composite
from .batches import DISTINCT_REQUESTS, batch_sizes, per_request, request_ids
from .registry import SemanticRegistry
from .tensors import ndarrays, tensors
from .untyped import untyped_keys, untyped_values
from .values import arrays, edge_floats, int128s, integers_between, texts, unencodable_text

__all__ = [
    "FieldContext",
    "from_struct",
    "from_annotation",
    "is_pickle_carrier",
    "union_arms",
    "integer_bounds",
    "MAX_DEPTH",
]

#: Nesting (containers and structs) past which optional values are None and
#: collections hold their minimum: bounds recursive types.
MAX_DEPTH = 10
#: Batch sizes for batch structs nested inside another message.
_NESTED_BATCH_MAX = 3
#: Distinct entries drawn for a per-request list of structs (see batches).
_DISTINCT_STRUCTS = 3
# A defaulted field is left unset once in eight. Not on the first (simplest)
# choice: Hypothesis draws that far more often than chance and in runs, and
# would tie every unset field to every other simplest outcome (an empty batch,
# the None arm) in the same examples.
_LEAVE_DEFAULT = one_in_draws(8)
_NONE = st.none()


def is_pickle_carrier(cls: type) -> bool:
    """Whether ``cls`` is an opaque pickle carrier: a struct that says so (``pickle_carrier: ClassVar[bool] = True``,
    as the reference schema's ``PickleWrapper`` does) and has one bytes field."""
    if not (isinstance(cls, type) and issubclass(cls, msgspec.Struct)) or getattr(cls, "pickle_carrier", False) is not True:
        return False
    fields = struct_info(cls).fields
    return len(fields) == 1 and isinstance(fields[0].type, mi.BytesType)


def union_arms(t: mi.UnionType, *, pickle_wrappers: bool = False) -> Tuple[bool, Tuple[mi.Type, ...]]:
    """``(has_none, arms)``: whether ``t`` admits None, and the other arms generated.

    Pickle carriers are dropped unless ``pickle_wrappers``; the coverage
    report uses the same rule to decide what is reachable.
    """
    has_none = any(isinstance(a, mi.NoneType) for a in t.types)
    arms = tuple(
        a
        for a in t.types
        if not isinstance(a, mi.NoneType)
        and (pickle_wrappers or not (isinstance(a, mi.StructType) and is_pickle_carrier(a.cls)))
    )
    return has_none, arms


def integer_bounds(t: mi.Type) -> Tuple[int, int, Optional[int]]:
    """``(min, max, multiple_of)`` generated for an ``IntType`` (or ``Metadata`` around one).

    Bounds come from ``ge``/``gt``/``le``/``lt`` and ``extra={"min"/"max"}``;
    a missing side is the int64 limit and nothing leaves msgpack's range.
    """
    extra: Mapping[str, Any] = {}
    if isinstance(t, mi.Metadata):
        extra = t.extra or {}
        t = t.type
    if not isinstance(t, mi.IntType):
        raise TypeError(f"integer_bounds takes an IntType, got {t!r}")
    lo = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else None)
    hi = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else None)
    if isinstance(extra.get("min"), int):
        lo = extra["min"] if lo is None else max(lo, extra["min"])
    if isinstance(extra.get("max"), int):
        hi = extra["max"] if hi is None else min(hi, extra["max"])
    lo = INT64_MIN if lo is None else max(lo, INT64_MIN)
    hi = INT64_MAX if hi is None else min(hi, UINT64_MAX)
    return lo, hi, t.multiple_of


def _init_fields(info: StructLike) -> Tuple[mi.Field, ...]:
    """The fields the class's constructor takes: all but a dataclass's ``init=False`` ones,
    which the class sets itself."""
    if isinstance(info, mi.DataclassType) and dataclasses.is_dataclass(info.cls):
        no_init = {f.name for f in dataclasses.fields(info.cls) if not f.init}
        return tuple(f for f in info.fields if f.name not in no_init)
    return info.fields


def _collection_cap(depth: int) -> int:
    if depth >= MAX_DEPTH:
        return 0
    return 4 if depth <= 2 else 3 if depth <= 4 else 2


def _strip_optional(t: mi.Type) -> Tuple[bool, mi.Type]:
    if isinstance(t, mi.UnionType):
        rest = [a for a in t.types if not isinstance(a, mi.NoneType)]
        if len(rest) == 1:
            return len(rest) != len(t.types), rest[0]
    return False, t


@dataclass(frozen=True)
class _FieldPlan:
    name: str
    type: mi.Type
    required: bool
    default: Any
    default_factory: Any
    parallel: bool  # a per-request list of a batch struct

    def default_value(self) -> Any:
        if self.default_factory is not msgspec.NODEFAULT:
            return self.default_factory()
        return self.default


def _default_fits(fp: _FieldPlan, n: Optional[int]) -> bool:
    """Whether leaving ``fp`` at its default keeps a batch consistent (a per-request
    list defaulting to ``[]`` does not, unless the batch is empty)."""
    if not fp.parallel or n is None:
        return True
    default = fp.default_value()
    return default is None or len(default) == n


@dataclass(frozen=True)
class _StructPlan:
    cls: type
    fields: Tuple[_FieldPlan, ...]
    batch_field: Optional[str]


@dataclass(frozen=True)
class _Options:
    registry: Optional[SemanticRegistry]
    pickle_wrappers: bool
    surrogates: bool
    batch_field: Optional[str]
    types: Tuple[Tuple[type, st.SearchStrategy], ...] = ()  # overrides by class
    untyped: Optional[st.SearchStrategy] = None  # None: untyped_values() (no enums)


class _FieldOverrides(Mapping):
    """The overrides for one struct's fields: field name -> strategy, factory(ctx), or the
    ``_FieldOverrides`` of the structs reached through that field (a dotted path's tail).

    Read-only; hashed by identity, because it keys the builder's caches.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any]):
        self._items = dict(items)

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def flat(self) -> Iterator[Tuple[str, Any]]:
        """``(dotted path, strategy or factory)`` for every override in the tree."""
        for name, value in self._items.items():
            if isinstance(value, _FieldOverrides):
                yield from ((f"{name}.{path}", leaf) for path, leaf in value.flat())
            else:
                yield name, value


class _Overrides:
    """``from_struct``'s ``overrides``, sorted out: by field path (for the message's
    struct) and by class (for the builder's options). Its repr is the mapping passed."""

    __slots__ = ("fields", "types")

    def __init__(self, fields: Optional[_FieldOverrides], types: Tuple[Tuple[type, st.SearchStrategy], ...]):
        self.fields = fields
        self.types = types

    def __repr__(self) -> str:
        shown: Dict[Any, Any] = {**dict(self.fields.flat() if self.fields else ()), **dict(self.types)}
        return repr(shown)


class _SiblingView(Mapping):
    """The sibling values, read-only, remembering whether a factory looked at them.

    A factory that never reads its siblings returns the same strategy for the
    same field, batch size and depth, so the builder caches its answer.
    """

    __slots__ = ("_values", "touched")

    def __init__(self, values: Dict[str, Any]):
        self._values = values
        self.touched = False

    def __getitem__(self, key: str) -> Any:
        self.touched = True
        return self._values[key]

    def __iter__(self):
        self.touched = True
        return iter(self._values)

    def __len__(self) -> int:
        self.touched = True
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        self.touched = True
        return key in self._values

    def get(self, key: str, default: Any = None) -> Any:
        self.touched = True
        return self._values.get(key, default)

    def __repr__(self) -> str:
        return f"siblings({self._values!r})"


@dataclass(frozen=True)
class FieldContext:
    """What a semantic factory knows about the field it is asked to generate.

    Attributes
    ----------
    owner
        The class the field belongs to (a Struct, dataclass or NamedTuple).
    name
        The field's name.
    type
        Its inspected type (``msgspec.inspect.Type``).
    values
        The sibling fields drawn so far, in declaration order (read-only). A
        sibling left at its default shows its default.
    batch_size
        The number of requests when ``owner`` is a batch struct, else ``None``.
    depth
        Nesting depth of ``owner`` within the message (0: the message itself).
    """

    owner: type
    name: str
    type: mi.Type
    values: Mapping[str, Any]
    batch_size: Optional[int]
    depth: int
    _builder: "_Builder" = field(repr=False, compare=False)
    _plan: _FieldPlan = field(repr=False, compare=False)

    @property
    def parallel(self) -> bool:
        """Whether this field is a per-request list that must hold ``batch_size`` entries."""
        return self._plan.parallel and self.batch_size is not None

    @property
    def pickle_wrappers(self) -> bool:
        """Whether opaque pickle carriers may be drawn (``from_struct(pickle_wrappers=True)``)."""
        return self._builder.options.pickle_wrappers

    @property
    def optional(self) -> bool:
        """Whether the field's type admits ``None``."""
        return isinstance(self.type, mi.UnionType) and any(isinstance(a, mi.NoneType) for a in self.type.types)

    def generic(self) -> st.SearchStrategy:
        """The type-driven strategy for this field (honouring the batch size)."""
        return self._builder.field_strategy(self._plan, self.depth, self.batch_size)

    def untyped(self) -> st.SearchStrategy:
        """This message's strategy for untyped (``Any``/``object``) values (the ``untyped`` option: its enums among the leaves)."""
        return self._builder.untyped

    def strategy_for(self, t: mi.Type) -> st.SearchStrategy:
        """The type-driven strategy for an inspected type nested one level below this field."""
        return self._builder.type_strategy(t, self.depth + 1)

    def struct(self, cls: builtins.type, overrides: Optional[Mapping[str, Any]] = None) -> st.SearchStrategy:
        """A nested struct drawn with this message's options (registry, batch field, ...).

        ``overrides``: field name -> strategy or factory(ctx), for fields of ``cls``.
        """
        return _nested_struct(builder=self._builder, cls=cls, depth=self.depth + 1, overrides=overrides)

    def per_request(self, items: st.SearchStrategy) -> st.SearchStrategy[list]:
        """A list of ``batch_size`` entries from ``items`` (see :func:`strategies.batches.per_request`)."""
        if self.batch_size is None:
            raise InvalidArgument(f"{self.owner.__qualname__}.{self.name} is not in a batch struct")
        return per_request(items, self.batch_size)

    def mostly(self, semantic: st.SearchStrategy, t: Optional[mi.Type] = None, *, one_in: int = 10) -> st.SearchStrategy:
        """``semantic``, except once in ``one_in`` draws the type-driven strategy.

        The type-driven strategy is :meth:`generic` (the whole field), or
        :meth:`strategy_for` ``t`` when ``t``, a type nested in the field, is
        given. Semantic strategies draw what an engine sends; the generic share
        keeps every value the declared type admits reachable, because a peer
        in another language may send any of them. Shrinks toward ``semantic``.
        """
        if not isinstance(one_in, int) or isinstance(one_in, bool) or one_in < 2:
            raise InvalidArgument(f"one_in must be an int >= 2, got {one_in!r}")
        return _cached_mostly(semantic, self.generic() if t is None else self.strategy_for(t), one_in)

    def with_none(self, value: st.SearchStrategy) -> st.SearchStrategy:
        """``None`` or ``value`` when the field is optional, else ``value``. Shrinks toward ``None``.

        In an empty batch: ``value`` three times in four, shrinking toward
        ``value`` (``[]`` for a per-request list), because engines build
        per-batch fields by iterating over the requests whatever their number.
        """
        if not self.optional:
            return value
        return _optional(value, self.batch_size)


def _optional(value: st.SearchStrategy, batch_size: Optional[int]) -> st.SearchStrategy:
    if batch_size == 0:
        return union((value, value, value, _NONE))
    return or_none(value)


@named_composite("mostly")
def _mostly(draw, semantic: st.SearchStrategy, generic: st.SearchStrategy, one_in: int):
    return draw(generic if draw(one_in_draws(one_in)) else semantic)


_cached_mostly = functools.lru_cache(maxsize=None)(_mostly)


class _Builder:
    """Strategies for inspected types under one set of options; caches everything it builds."""

    def __init__(self, options: _Options):
        self.options = options
        self.by_type: Dict[type, st.SearchStrategy] = dict(options.types)
        self.untyped: st.SearchStrategy = untyped_values() if options.untyped is None else options.untyped
        self._types: Dict[Tuple[int, int, Optional[_FieldOverrides]], Tuple[mi.Type, st.SearchStrategy]] = {}
        self._plans: Dict[type, _StructPlan] = {}
        self._fields: Dict[
            Tuple[int, int, Optional[int], Optional[_FieldOverrides]], Tuple[_FieldPlan, st.SearchStrategy]
        ] = {}
        self._answers: Dict[Tuple[Any, type, str, Optional[int], int], Optional[st.SearchStrategy]] = {}

    # --- structs ------------------------------------------------------------

    def plan(self, cls: type) -> _StructPlan:
        """The fields of ``cls`` with what the builder needs to know about each (cached)."""
        try:
            return self._plans[cls]
        except KeyError:
            pass
        info = struct_info(cls)
        names = {f.name for f in info.fields}
        batch = self.options.batch_field if self.options.batch_field in names else None
        fields = []
        for f in _init_fields(info):
            _, inner = _strip_optional(f.type)
            fields.append(
                _FieldPlan(
                    name=f.name,
                    type=f.type,
                    required=f.required,
                    default=f.default,
                    default_factory=f.default_factory,
                    parallel=batch is not None and isinstance(inner, mi.ListType),
                )
            )
        plan = self._plans[cls] = _StructPlan(cls, tuple(fields), batch)
        return plan

    def draw_struct(self, draw, cls: type, depth: int, overrides: Optional[Mapping[str, Any]]) -> Any:
        """An instance of ``cls`` (a Struct, dataclass or NamedTuple): the batch size first
        (batch structs), then each field in declaration order, left at its default once in
        eight (where that keeps the batch consistent), else from the override, the registry
        or the type, in that order. A field with overrides below it (a ``_FieldOverrides``)
        is drawn from its type, those overrides applying to the structs it holds."""
        plan = self.plan(cls)
        n = None
        if plan.batch_field is not None:
            n = draw(_TOP_BATCH if depth == 0 else _NESTED_BATCH)
        values: Dict[str, Any] = {}
        view = _SiblingView(values)
        kwargs: Dict[str, Any] = {}
        registry = self.options.registry
        for fp in plan.fields:
            if not fp.required and _default_fits(fp, n) and draw(_LEAVE_DEFAULT):
                values[fp.name] = fp.default_value()
                continue
            chosen = overrides.get(fp.name) if overrides else None
            strategy = None
            if isinstance(chosen, _FieldOverrides):
                strategy = self.field_strategy(fp, depth, n, chosen)
            elif chosen is not None or registry is not None:
                ctx = FieldContext(cls, fp.name, fp.type, view, n, depth, self, fp)
                strategy = self._chosen(ctx, view, chosen)
            if strategy is None:
                strategy = self.field_strategy(fp, depth, n)
            value = draw(strategy)
            values[fp.name] = kwargs[fp.name] = value
        return cls(**kwargs)

    def _chosen(self, ctx: FieldContext, view: _SiblingView, chosen: Any) -> Optional[st.SearchStrategy]:
        """The override ``chosen`` (a strategy or factory, None when there is none) or else the
        first registry answer for ``ctx``; None for the type-driven default."""
        if chosen is not None:
            if isinstance(chosen, st.SearchStrategy):
                return chosen
            factories: Tuple[Any, ...] = (chosen,)
        elif self.options.registry is not None:
            factories = self.options.registry.factories_for(ctx.name)
        else:
            return None
        for factory in factories:
            key = (factory, ctx.owner, ctx.name, ctx.batch_size, ctx.depth)
            try:
                result = self._answers[key]
            except KeyError:
                view.touched = False
                result = factory(ctx)
                if result is not None:
                    _check_factory_result(result, factory, ctx)
                if not view.touched:
                    self._answers[key] = result
            if result is not None:
                return result
        return None

    def field_strategy(
        self, fp: _FieldPlan, depth: int, n: Optional[int], below: Optional[_FieldOverrides] = None
    ) -> st.SearchStrategy:
        """The type-driven strategy for a field; a per-request list gets exactly ``n`` entries.

        ``below``: the overrides for the structs the field holds.
        """
        length = n if fp.parallel else None
        key = (id(fp), depth, length, below)
        hit = self._fields.get(key)
        if hit is not None:
            return hit[1]
        if length is None:
            strategy = self.type_strategy(fp.type, depth + 1, below)
        else:
            optional, lst = _strip_optional(fp.type)
            assert isinstance(lst, mi.ListType)  # what made the plan call it parallel
            if fp.name == self.options.batch_field and isinstance(lst.item_type, mi.StrType):
                items = request_ids(length)
            else:
                item_type = lst.item_type
                heavy = isinstance(_strip_optional(item_type)[1], mi.StructType)
                # A whole request per entry (BatchTokenizedGenerateReqInput.batch)
                # is large; fewer distinct ones keep the example within budget.
                items = per_request(
                    self.type_strategy(item_type, depth + 2, below),
                    length,
                    distinct=_DISTINCT_STRUCTS if heavy else DISTINCT_REQUESTS,
                )
            strategy = _optional(items, length) if optional else items
        self._fields[key] = (fp, strategy)
        return strategy

    # --- types --------------------------------------------------------------

    def type_strategy(self, t: mi.Type, depth: int, below: Optional[_FieldOverrides] = None) -> st.SearchStrategy:
        """The strategy for inspected type ``t`` at nesting ``depth`` (cached); ``below``: the
        field overrides for the structs ``t`` holds (not for those nested in them)."""
        depth = min(depth, MAX_DEPTH)
        key = (id(t), depth, below)
        hit = self._types.get(key)
        if hit is not None:
            return hit[1]
        strategy = self._build(t, depth, below)
        self._types[key] = (t, strategy)  # keeps t alive so its id stays unique
        return strategy

    def _build(self, t: mi.Type, depth: int, below: Optional[_FieldOverrides]) -> st.SearchStrategy:
        cls = getattr(t, "cls", None)
        if cls is not None and cls in self.by_type:
            return self.by_type[cls]
        if is_untyped(t):
            return self.untyped
        sub = functools.partial(self.type_strategy, depth=depth + 1, below=below)
        if isinstance(t, mi.NoneType):
            return st.none()
        if isinstance(t, mi.BoolType):
            return st.booleans()
        if isinstance(t, (mi.IntType, mi.Metadata)) and isinstance(getattr(t, "type", t), mi.IntType):
            lo, hi, multiple = integer_bounds(t)
            if multiple:
                first, last = -(-lo // multiple), hi // multiple
                if first > last:
                    raise InvalidArgument(f"no multiple of {multiple} lies in [{lo}, {hi}]")
                return st.integers(first, last).map(functools.partial(_times, multiple))
            return integers_between(lo, hi)
        if isinstance(t, mi.Metadata):
            return self.type_strategy(t.type, depth, below)
        if isinstance(t, mi.FloatType):
            return _floats(t)
        if isinstance(t, mi.StrType):
            return self._text(t)
        if isinstance(t, (mi.BytesType, mi.ByteArrayType, mi.MemoryViewType)):
            s = st.binary(min_size=t.min_length or 0, max_size=t.max_length if t.max_length is not None else 16)
            if isinstance(t, mi.ByteArrayType):
                return s.map(bytearray)
            if isinstance(t, mi.MemoryViewType):
                return s.map(memoryview)
            return s
        if isinstance(t, mi.LiteralType):
            return st.sampled_from(t.values)
        if isinstance(t, mi.EnumType):
            return st.sampled_from(list(t.cls))
        if isinstance(t, mi.UnionType):
            return self._union(t, depth, below)
        if isinstance(t, mi.CollectionType):
            lo, hi = self._sizes(t, depth)
            if is_set(t):
                item = untyped_keys() if is_untyped(t.item_type) else sub(t.item_type)
            else:
                item = sub(t.item_type)
            if isinstance(t, mi.SetType):
                return st.sets(item, min_size=lo, max_size=hi)
            if isinstance(t, mi.FrozenSetType):
                return st.frozensets(item, min_size=lo, max_size=hi)
            lists = st.lists(item, min_size=lo, max_size=hi)
            return lists.map(tuple) if isinstance(t, mi.VarTupleType) else lists
        if isinstance(t, mi.TupleType):
            return st.tuples(*(sub(x) for x in t.item_types))
        if isinstance(t, MAPPING_TYPES):
            lo, hi = self._sizes(t, depth)
            keys = untyped_keys() if is_untyped(t.key_type) else sub(t.key_type)
            return st.dictionaries(keys, sub(t.value_type), min_size=lo, max_size=hi)
        if isinstance(t, STRUCT_TYPES):
            if isinstance(t, mi.StructType) and is_pickle_carrier(t.cls):
                return _pickled(t.cls, self.untyped)
            return _nested_struct(builder=self, cls=t.cls, depth=depth, overrides=below)
        if isinstance(t, mi.TypedDictType):
            required = {f.name: sub(f.type) for f in t.fields if f.required}
            optional = {f.name: sub(f.type) for f in t.fields if not f.required}
            return st.fixed_dictionaries(required, optional=optional)
        if isinstance(t, mi.DateTimeType):
            return _datetimes(t.tz)
        if isinstance(t, mi.DateType):
            return st.dates()
        if isinstance(t, mi.TimeType):
            return st.times(timezones=_tz_strategy(t.tz))
        if isinstance(t, mi.TimeDeltaType):
            return st.timedeltas()
        if isinstance(t, mi.UUIDType):
            return st.uuids()
        if isinstance(t, mi.DecimalType):
            return st.decimals(allow_nan=False, allow_infinity=False)
        if isinstance(t, mi.ExtType):
            return st.builds(msgspec.msgpack.Ext, st.integers(-128, 127), st.binary(max_size=16))
        if isinstance(t, mi.RawType):
            return st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), texts()).map(
                lambda v: msgspec.Raw(msgspec.msgpack.encode(v))
            )
        if isinstance(t, mi.CustomType):
            return _custom_type_strategy(t.cls)
        raise InvalidArgument(f"no strategy for the msgspec type {t!r}")

    def _sizes(self, t: Union[mi.CollectionType, MappingType], depth: int) -> Tuple[int, int]:
        lo = t.min_length or 0
        hi = max(lo, _collection_cap(depth))
        if t.max_length is not None:
            hi = min(hi, t.max_length)
        return lo, hi

    def _text(self, t: mi.StrType) -> st.SearchStrategy:
        base = texts(min_size=t.min_length or 0, max_size=t.max_length, pattern=t.pattern)
        if not self.options.surrogates or t.pattern is not None:
            return base
        bad = unencodable_text()
        if t.min_length or t.max_length is not None:
            lo, hi = t.min_length or 0, t.max_length
            bad = bad.filter(lambda s: lo <= len(s) and (hi is None or len(s) <= hi))
        return st.one_of(base, bad)

    def _union(self, t: mi.UnionType, depth: int, below: Optional[_FieldOverrides]) -> st.SearchStrategy:
        has_none, arms = union_arms(t, pickle_wrappers=self.options.pickle_wrappers)
        if has_none and depth >= MAX_DEPTH:
            return st.none()
        plain = [a for a in arms if not (isinstance(a, mi.StructType) and is_pickle_carrier(a.cls))]
        branches = [st.none()] if has_none else []
        branches += [self.type_strategy(a, depth, below) for a in plain]
        carriers = [a.cls for a in arms if isinstance(a, mi.StructType) and a not in plain]
        if carriers:
            inner = union(tuple(self.type_strategy(a, depth, below) for a in plain)) if plain else self.untyped
            branches += [_pickled(cls, inner) for cls in carriers]
        if not branches:
            raise InvalidArgument(f"union {t!r} has no arm to generate")
        return union(tuple(branches))


def _times(multiple: int, k: int) -> int:
    return k * multiple


def _floats(t: mi.FloatType) -> st.SearchStrategy[float]:
    if all(getattr(t, b) is None for b in ("ge", "gt", "le", "lt", "multiple_of")):
        return edge_floats()
    lo = t.ge if t.ge is not None else t.gt
    hi = t.le if t.le is not None else t.lt
    s = st.floats(
        min_value=lo,
        max_value=hi,
        exclude_min=t.gt is not None,
        exclude_max=t.lt is not None,
        allow_nan=False,
    )
    if t.multiple_of:
        m = t.multiple_of
        s = s.map(lambda x: round(x / m) * m).filter(
            lambda x: (lo is None or x >= lo) and (hi is None or x <= hi) and not math.isinf(x)
        )
    return s


def _tz_strategy(tz: Optional[bool]) -> st.SearchStrategy:
    aware = st.sampled_from([datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=5, minutes=30))])
    if tz is None:
        return st.one_of(st.none(), aware)
    return aware if tz else st.none()


def _datetimes(tz: Optional[bool]) -> st.SearchStrategy:
    return st.datetimes(timezones=_tz_strategy(tz))


@named_composite("pickled")
def _pickled(draw, carrier: type, inner: st.SearchStrategy):
    (name,) = (f.name for f in struct_info(carrier).fields)
    return carrier(**{name: pickle.dumps(draw(inner), protocol=pickle.HIGHEST_PROTOCOL)})


_CUSTOM: Dict[type, Callable[[], st.SearchStrategy]] = {
    array: arrays,
    torch.Tensor: tensors,
    np.ndarray: ndarrays,
    Int128: int128s,
}


def _custom_type_strategy(cls: type) -> st.SearchStrategy:
    """The strategy for a msgspec ``CustomType``: the table above, else ``st.from_type(cls)``.

    Raises ``InvalidArgument`` naming the class when neither knows it.
    """
    for known, make in _CUSTOM.items():
        if cls is known:
            return make()
    try:
        strategy: st.SearchStrategy = st.from_type(cls)
        strategy.validate()
    except (ResolutionFailed, InvalidArgument, TypeError) as exc:
        raise InvalidArgument(
            f"no strategy for custom type {cls.__qualname__}: register one with "
            f"hypothesis.strategies.register_type_strategy or pass overrides= ({exc})"
        ) from None
    return strategy


_TOP_BATCH = batch_sizes()
_NESTED_BATCH = batch_sizes(max_size=_NESTED_BATCH_MAX)


def _check_factory_result(result, factory, ctx: FieldContext) -> st.SearchStrategy:
    if not isinstance(result, st.SearchStrategy):
        raise InvalidArgument(
            f"factory {getattr(factory, '__qualname__', factory)!r} for {ctx.owner.__qualname__}.{ctx.name} "
            f"returned {result!r}, not a strategy or None"
        )
    return result


@named_composite("nested_struct")
def _nested_struct(draw, builder: _Builder, cls: type, depth: int, overrides):
    return builder.draw_struct(draw, cls, depth, overrides)


@functools.lru_cache(maxsize=None)
def _builder_for(options: _Options) -> _Builder:
    return _Builder(options)


@named_composite("from_struct")
def _from_struct(
    draw,
    cls: type,
    overrides: Optional[_Overrides] = None,
    registry: Optional[SemanticRegistry] = None,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
    batch_field: Optional[str] = None,
    untyped: Optional[st.SearchStrategy] = None,
):
    by_type = overrides.types if overrides else ()
    builder = _builder_for(_Options(registry, pickle_wrappers, surrogates, batch_field, by_type, untyped))
    return builder.draw_struct(draw, cls, 0, overrides.fields if overrides else None)


def _check_supported(root: mi.Type, where: str, overrides: Optional[_Overrides]) -> None:
    """Fail now, naming the field, for any custom type nobody can generate.

    A class with a type override needs no strategy of its own, nor does a
    field with an override (by name or by path).
    """
    overridden = {cls for cls, _ in overrides.types} if overrides else set()
    seen: set = set()

    def check(t: mi.Type, where: str, below: Optional[_FieldOverrides]) -> None:
        t = unwrap(t)
        if getattr(t, "cls", None) in overridden:
            return
        if isinstance(t, mi.CustomType) and not is_untyped(t):
            try:
                _custom_type_strategy(t.cls)
            except InvalidArgument as exc:
                raise InvalidArgument(f"{where}: {exc}") from None
            return
        if isinstance(t, STRUCT_TYPES):
            if (t.cls, below) in seen:
                return
            seen.add((t.cls, below))
            for f in _init_fields(t):
                chosen = below.get(f.name) if below else None
                if chosen is None or isinstance(chosen, _FieldOverrides):
                    check(f.type, f"{t.cls.__qualname__}.{f.name}", chosen)
            return
        for _, child in children(t):
            check(child, where, below)

    check(root, where, overrides.fields if overrides else None)


def _root_info(cls: Any) -> StructLike:
    """The inspected ``cls``; ``InvalidArgument`` unless it is a Struct, dataclass or NamedTuple class."""
    try:
        info = type_info(cls) if isinstance(cls, type) else None
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"cls {cls.__qualname__} is not a class msgspec understands: {exc}") from None
    if not isinstance(info, STRUCT_TYPES):
        raise InvalidArgument(f"cls must be a msgspec.Struct, dataclass or NamedTuple class, got {cls!r}")
    return info


def _sort_overrides(root: Optional[StructLike], overrides: Any) -> _Overrides:
    """``overrides`` checked and sorted into those by field path (for the struct ``root``;
    ``None``: none allowed) and those by class."""
    if not isinstance(overrides, Mapping):
        raise InvalidArgument(f"overrides must be a mapping of field name, path or class to strategy, got {overrides!r}")
    paths: Dict[str, Any] = {}
    by_type: List[Tuple[type, st.SearchStrategy]] = []
    for key, value in overrides.items():
        if isinstance(key, type):
            by_type.append((key, _type_override(key, value)))
        elif isinstance(key, str) and root is not None:
            if not (isinstance(value, st.SearchStrategy) or callable(value)):
                raise InvalidArgument(f"overrides[{key!r}] must be a strategy or a factory(ctx), got {value!r}")
            paths[key] = value
        else:
            allowed = "field names, dotted paths or classes" if root is not None else "classes"
            raise InvalidArgument(f"overrides has the key {key!r}; its keys must be {allowed}")
    return _Overrides(_path_tree(root, paths) if paths and root is not None else None, tuple(by_type))


def _type_override(cls: type, value: Any) -> st.SearchStrategy:
    """``value``, checked as the override for every value declared as ``cls``."""
    if not isinstance(value, st.SearchStrategy):
        raise InvalidArgument(f"overrides[{cls.__qualname__}] must be a strategy, got {value!r}")
    try:
        info = mi.type_info(cls)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"overrides has {cls.__qualname__}, which msgspec cannot inspect: {exc}") from None
    if cls is object or getattr(info, "cls", None) is not cls:
        raise InvalidArgument(
            f"overrides has {cls.__qualname__}, which msgspec reads as {type(info).__name__}: a class key must be a "
            "custom class, Struct, dataclass, NamedTuple, TypedDict or Enum (untyped= covers Any and object)"
        )
    return value


def _path_tree(root: StructLike, paths: Mapping[str, Any]) -> _FieldOverrides:
    """The overrides by dotted path as a tree, each segment checked against the fields of
    the struct(s) the path has reached (``root``'s first)."""
    tree: Dict[str, Any] = {}
    for path, value in paths.items():
        segments = path.split(".")
        node: Dict[str, Any] = tree
        owners: List[StructLike] = [root]
        for i, name in enumerate(segments):
            fields = [f for owner in owners for f in _init_fields(owner) if f.name == name]
            if not fields:
                names = ", ".join(dict.fromkeys(f.name for owner in owners for f in _init_fields(owner)))
                where = " or ".join(dict.fromkeys(owner.cls.__qualname__ for owner in owners))
                raise InvalidArgument(f"overrides has {path!r}: {name!r} is not a field of {where} (fields: {names})")
            prefix = ".".join(segments[: i + 1])
            if i == len(segments) - 1:
                if name in node:
                    raise InvalidArgument(f"overrides has both {prefix!r} and a path below it; keep one")
                node[name] = value
                break
            node = node.setdefault(name, {})
            if not isinstance(node, dict):
                raise InvalidArgument(f"overrides has both {prefix!r} and a path below it; keep one")
            owners = [s for f in fields for s in structs_under(f.type)]
            if not owners:
                raise InvalidArgument(
                    f"overrides has {path!r}: {prefix!r} holds no Struct, dataclass or NamedTuple to look "
                    f"{segments[i + 1]!r} up in"
                )
    return _frozen(tree)


def _frozen(tree: Dict[str, Any]) -> _FieldOverrides:
    return _FieldOverrides({k: _frozen(v) if isinstance(v, dict) else v for k, v in tree.items()})


def _check_options(registry: Any, pickle_wrappers: Any, surrogates: Any, untyped: Any) -> None:
    if registry is not None and not isinstance(registry, SemanticRegistry):
        raise InvalidArgument(f"registry must be a SemanticRegistry or None, got {registry!r}")
    check_bool(pickle_wrappers, "pickle_wrappers")
    check_bool(surrogates, "surrogates")
    if untyped is not None and not isinstance(untyped, st.SearchStrategy):
        raise InvalidArgument(f"untyped must be a hypothesis strategy or None, got {untyped!r}")


def from_struct(
    cls: type,
    overrides: Optional[Mapping[Union[str, type], Union[st.SearchStrategy, Callable[[FieldContext], st.SearchStrategy]]]] = None,
    *,
    registry: Optional[SemanticRegistry] = None,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
    batch_field: Optional[str] = None,
    untyped: Optional[st.SearchStrategy] = None,
) -> st.SearchStrategy:
    """Instances of any ``msgspec.Struct``, dataclass or NamedTuple class, honouring its
    types, constraints and meaning.

    Parameters
    ----------
    cls
        A ``msgspec.Struct`` subclass (a message of the reference schema or of
        any other implementation), a dataclass or a NamedTuple class.
    overrides
        What to draw instead of the type-driven default, by key:

        * a field name of ``cls`` -> strategy, or factory ``f(ctx:
          FieldContext) -> strategy`` (``None``: the type-driven default);
        * a dotted path ``"utility_output.result"`` -> the same, for the
          field ``result`` of the struct(s) that field ``utility_output``
          holds, wherever in its type they are (through optionals, unions,
          lists, tuples and dict values); the fields on the way are drawn
          from their types (the registry is not asked for them);
        * a class -> strategy, for every value declared as that class
          anywhere in the message: a custom class (which then needs no
          registered strategy), a Struct, dataclass, NamedTuple, TypedDict or
          Enum (for example one whose ``__post_init__`` refuses some values).

        A field's override (by name or path) takes precedence over the
        registry, and both over a class override, which replaces the
        type-driven default wherever it is used (``FieldContext.generic``
        included). Every name and path is checked now: ``InvalidArgument``
        names the missing segment and the fields it could have been.
    registry
        The :class:`~strategies.registry.SemanticRegistry` consulted by field
        name at every nesting level (default ``None``: none, purely
        type-driven values; the reference schema's meanings are the opt-in
        :data:`strategies.reference.REGISTRY`).
    pickle_wrappers
        Also draw SGLang's ``PickleWrapper`` where a union admits it (holding
        a pickle of one of the union's other arms). Decoding those requires
        ``ReferenceCodec(allow_pickle=True)``.
    surrogates
        Let ``str`` values hold lone surrogates (see
        :func:`strategies.unencodable_text`): such messages are picklable but
        no msgpack codec can encode them.
    batch_field
        The field whose presence makes a struct a batch (the reference
        schema's is ``"rids"``); every list-typed field of such a struct gets
        one entry per request. ``None`` (the default) disables batch handling.
    untyped
        The strategy for every ``Any``/``object`` value (``None``:
        :func:`strategies.untyped_values`, rich values with no enum members;
        :data:`strategies.reference.UNTYPED` adds the reference schema's
        enums; an implementation whose untyped fields hold JSON passes
        ``untyped_values(json_like=True)``). Keys of untyped dicts and items of
        untyped sets are :func:`strategies.untyped_keys` either way.

    Shrinks field by field in declaration order: optional fields toward
    ``None``, defaulted fields toward their default, unions toward their first
    arm, collections toward empty, batches toward size 0, numbers toward 0.
    """
    info = _root_info(cls)
    sorted_overrides = None if overrides is None else _sort_overrides(info, overrides)
    _check_options(registry, pickle_wrappers, surrogates, untyped)
    if batch_field is not None and not isinstance(batch_field, str):
        raise InvalidArgument(f"batch_field must be a str or None, got {batch_field!r}")
    _check_supported(info, cls.__qualname__, sorted_overrides)
    kwargs: Dict[str, Any] = {}
    if overrides:
        kwargs["overrides"] = sorted_overrides
    if registry is not None:
        kwargs["registry"] = registry
    if pickle_wrappers:
        kwargs["pickle_wrappers"] = True
    if surrogates:
        kwargs["surrogates"] = True
    if batch_field is not None:
        kwargs["batch_field"] = batch_field
    if untyped is not None:
        kwargs["untyped"] = untyped
    return _from_struct(cls, **kwargs)


@named_composite("from_annotation")
def _from_annotation(
    draw,
    annotation: Any,
    registry,
    pickle_wrappers: bool,
    surrogates: bool,
    overrides: Optional[_Overrides] = None,
    untyped: Optional[st.SearchStrategy] = None,
    batch_field: Optional[str] = None,
):
    by_type = overrides.types if overrides else ()
    builder = _builder_for(_Options(registry, pickle_wrappers, surrogates, batch_field, by_type, untyped))
    return draw(builder.type_strategy(_annotation_info(annotation), 0))


_annotation_cache: Dict[Any, mi.Type] = {}


def _annotation_info(annotation: Any) -> mi.Type:
    try:
        return _annotation_cache[annotation]
    except (KeyError, TypeError):
        pass
    info = mi.type_info(annotation)
    try:
        _annotation_cache[annotation] = info
    except TypeError:
        pass
    return info


def from_annotation(
    annotation: Any,
    *,
    registry: Optional[SemanticRegistry] = None,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
    overrides: Optional[Mapping[type, st.SearchStrategy]] = None,
    untyped: Optional[st.SearchStrategy] = None,
    batch_field: Optional[str] = None,
) -> st.SearchStrategy:
    """Values of any type msgspec understands (``List[Optional[Int64]]``, a Struct, ...).

    The same rules and defaults as :func:`from_struct`; structs met inside use
    ``registry`` and ``batch_field``.
    ``overrides`` takes classes only as keys (class -> strategy, as in
    :func:`from_struct`). Shrinks as :func:`from_struct` describes.
    """
    try:
        info = _annotation_info(annotation)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"annotation {annotation!r} is not a type msgspec understands: {exc}") from None
    sorted_overrides = None if overrides is None else _sort_overrides(None, overrides)
    _check_options(registry, pickle_wrappers, surrogates, untyped)
    if batch_field is not None and not isinstance(batch_field, str):
        raise InvalidArgument(f"batch_field must be a str or None, got {batch_field!r}")
    _check_supported(info, repr(annotation), sorted_overrides)
    kwargs: Dict[str, Any] = {}
    if overrides:
        kwargs["overrides"] = sorted_overrides
    if untyped is not None:
        kwargs["untyped"] = untyped
    if batch_field is not None:
        kwargs["batch_field"] = batch_field
    return _from_annotation(annotation, registry=registry, pickle_wrappers=pickle_wrappers, surrogates=surrogates, **kwargs)
