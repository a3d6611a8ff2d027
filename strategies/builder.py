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
  nested, tagged and array-like structs, TypedDicts, dataclasses, NamedTuples,
  msgspec's datetime/UUID/Decimal/Ext/Raw types;
* custom types: ``array.array``, ``torch.Tensor``, ``numpy.ndarray``,
  :class:`~reference_codec.schema.Int128` (full 128-bit range), and
  ``object``/``Any`` (see :mod:`strategies.untyped`); any other custom class
  must have a strategy registered with ``st.register_type_strategy``;
* defaults: a field with a default is left unset an eighth of the time.

Two things the types cannot say come from elsewhere:

* *batches*: in a struct with a ``rids`` field (the ``batch_field``), every
  list-typed field is a per-request parallel list as long as the batch (see
  :mod:`strategies.batches`);
* *meaning*: the :class:`~strategies.registry.SemanticRegistry` supplies a
  strategy by field name (see :mod:`strategies.semantic`).

``PickleWrapper`` (SGLang's opaque pickle carrier) is left out of unions unless
``pickle_wrappers=True``: the reference codec refuses to unpickle by default,
so a default message must not hold one.
"""

from __future__ import annotations

import datetime
import functools
import math
import pickle
import types
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import hypothesis.strategies as st
import msgspec
import numpy as np
import torch
from hypothesis.errors import InvalidArgument, ResolutionFailed
from msgspec import inspect as mi

from reference_codec.schema import INT64_MAX, INT64_MIN, UINT64_MAX, Int128

from ._draws import one_in as one_in_draws
from ._draws import or_none, union
from ._public import check_bool, named_composite
from .batches import DISTINCT_REQUESTS, batch_sizes, per_request, request_ids
from .registry import DEFAULT_REGISTRY, SemanticRegistry
from .tensors import ndarrays, tensors
from .untyped import untyped_values
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
    """Whether ``cls`` is an opaque pickle carrier (a struct named ``PickleWrapper`` with one bytes field)."""
    if not (isinstance(cls, type) and issubclass(cls, msgspec.Struct)) or cls.__name__ != "PickleWrapper":
        return False
    fields = _struct_info(cls).fields
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
    lo = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else None)
    hi = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else None)
    if isinstance(extra.get("min"), int):
        lo = extra["min"] if lo is None else max(lo, extra["min"])
    if isinstance(extra.get("max"), int):
        hi = extra["max"] if hi is None else min(hi, extra["max"])
    lo = INT64_MIN if lo is None else max(lo, INT64_MIN)
    hi = INT64_MAX if hi is None else min(hi, UINT64_MAX)
    return lo, hi, t.multiple_of


@functools.lru_cache(maxsize=None)
def _struct_info(cls: type) -> mi.StructType:
    return mi.type_info(cls)


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
        The struct class the field belongs to.
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

    def strategy_for(self, t: mi.Type) -> st.SearchStrategy:
        """The type-driven strategy for an inspected type nested one level below this field."""
        return self._builder.type_strategy(t, self.depth + 1)

    def struct(self, cls: type, overrides: Optional[Mapping[str, Any]] = None) -> st.SearchStrategy:
        """A nested struct drawn with this message's options (registry, batch field, ...)."""
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
        self._types: Dict[Tuple[int, int], Tuple[mi.Type, st.SearchStrategy]] = {}
        self._plans: Dict[type, _StructPlan] = {}
        self._fields: Dict[Tuple[int, int, Optional[int]], Tuple[_FieldPlan, st.SearchStrategy]] = {}
        self._answers: Dict[Tuple[Any, type, str, Optional[int], int], Optional[st.SearchStrategy]] = {}

    # --- structs ------------------------------------------------------------

    def plan(self, cls: type) -> _StructPlan:
        """The fields of ``cls`` with what the builder needs to know about each (cached)."""
        try:
            return self._plans[cls]
        except KeyError:
            pass
        info = _struct_info(cls)
        names = {f.name for f in info.fields}
        batch = self.options.batch_field if self.options.batch_field in names else None
        fields = []
        for f in info.fields:
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
        """An instance of ``cls``: the batch size first (batch structs), then each field in
        declaration order, left at its default once in eight (where that keeps the batch
        consistent), else from the override, the registry or the type, in that order."""
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
            strategy = None
            if (overrides and fp.name in overrides) or registry is not None:
                ctx = FieldContext(cls, fp.name, fp.type, view, n, depth, self, fp)
                strategy = self._chosen(ctx, view, overrides)
            if strategy is None:
                strategy = self.field_strategy(fp, depth, n)
            value = draw(strategy)
            values[fp.name] = kwargs[fp.name] = value
        return cls(**kwargs)

    def _chosen(self, ctx: FieldContext, view: _SiblingView, overrides) -> Optional[st.SearchStrategy]:
        """The override or the first registry answer for ``ctx``; None for the type-driven default."""
        if overrides and ctx.name in overrides:
            chosen = overrides[ctx.name]
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

    def field_strategy(self, fp: _FieldPlan, depth: int, n: Optional[int]) -> st.SearchStrategy:
        """The type-driven strategy for a field; a per-request list gets exactly ``n`` entries."""
        length = n if fp.parallel else None
        key = (id(fp), depth, length)
        hit = self._fields.get(key)
        if hit is not None:
            return hit[1]
        if length is None:
            strategy = self.type_strategy(fp.type, depth + 1)
        else:
            optional, lst = _strip_optional(fp.type)
            if fp.name == self.options.batch_field and isinstance(lst.item_type, mi.StrType):
                items = request_ids(length)
            else:
                item_type = lst.item_type
                heavy = isinstance(_strip_optional(item_type)[1], mi.StructType)
                # A whole request per entry (BatchTokenizedGenerateReqInput.batch)
                # is large; fewer distinct ones keep the example within budget.
                items = per_request(self.type_strategy(item_type, depth + 2), length, distinct=_DISTINCT_STRUCTS if heavy else DISTINCT_REQUESTS)
            strategy = _optional(items, length) if optional else items
        self._fields[key] = (fp, strategy)
        return strategy

    # --- types --------------------------------------------------------------

    def type_strategy(self, t: mi.Type, depth: int) -> st.SearchStrategy:
        """The strategy for inspected type ``t`` at nesting ``depth`` (cached)."""
        depth = min(depth, MAX_DEPTH)
        key = (id(t), depth)
        hit = self._types.get(key)
        if hit is not None:
            return hit[1]
        strategy = self._build(t, depth)
        self._types[key] = (t, strategy)  # keeps t alive so its id stays unique
        return strategy

    def _build(self, t: mi.Type, depth: int) -> st.SearchStrategy:
        sub = functools.partial(self.type_strategy, depth=depth + 1)
        if isinstance(t, mi.AnyType):
            return untyped_values()
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
            return self.type_strategy(t.type, depth)
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
            return self._union(t, depth)
        if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
            lo, hi = self._sizes(t, depth)
            item = sub(t.item_type)
            if isinstance(t, mi.SetType):
                return st.sets(item, min_size=lo, max_size=hi)
            if isinstance(t, mi.FrozenSetType):
                return st.frozensets(item, min_size=lo, max_size=hi)
            lists = st.lists(item, min_size=lo, max_size=hi)
            return lists.map(tuple) if isinstance(t, mi.VarTupleType) else lists
        if isinstance(t, mi.TupleType):
            return st.tuples(*(sub(x) for x in t.item_types))
        if isinstance(t, (mi.DictType,)) or type(t).__name__ == "FrozenDictType":
            lo, hi = self._sizes(t, depth)
            return st.dictionaries(sub(t.key_type), sub(t.value_type), min_size=lo, max_size=hi)
        if isinstance(t, mi.StructType):
            if is_pickle_carrier(t.cls):
                return _pickled(t.cls, untyped_values())
            return _nested_struct(builder=self, cls=t.cls, depth=depth, overrides=None)
        if isinstance(t, mi.TypedDictType):
            required = {f.name: sub(f.type) for f in t.fields if f.required}
            optional = {f.name: sub(f.type) for f in t.fields if not f.required}
            return st.fixed_dictionaries(required, optional=optional)
        if isinstance(t, (mi.DataclassType, mi.NamedTupleType)):
            return _keyword_class(cls=t.cls, fields=tuple((f.name, f.required, sub(f.type)) for f in t.fields))
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

    def _sizes(self, t, depth: int) -> Tuple[int, int]:
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

    def _union(self, t: mi.UnionType, depth: int) -> st.SearchStrategy:
        has_none, arms = union_arms(t, pickle_wrappers=self.options.pickle_wrappers)
        if has_none and depth >= MAX_DEPTH:
            return st.none()
        plain = [a for a in arms if not (isinstance(a, mi.StructType) and is_pickle_carrier(a.cls))]
        branches = [st.none()] if has_none else []
        branches += [self.type_strategy(a, depth) for a in plain]
        carriers = [a.cls for a in arms if a not in plain]
        if carriers:
            inner = union(tuple(self.type_strategy(a, depth) for a in plain)) if plain else untyped_values()
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
    (name,) = (f.name for f in _struct_info(carrier).fields)
    return carrier(**{name: pickle.dumps(draw(inner), protocol=pickle.HIGHEST_PROTOCOL)})


@named_composite("builds_keywords")
def _keyword_class(draw, cls: type, fields: Tuple[Tuple[str, bool, st.SearchStrategy], ...]):
    kwargs = {}
    for name, required, strategy in fields:
        if required or not draw(_LEAVE_DEFAULT):
            kwargs[name] = draw(strategy)
    return cls(**kwargs)


_CUSTOM: Dict[type, Callable[[], st.SearchStrategy]] = {
    array: arrays,
    torch.Tensor: tensors,
    np.ndarray: ndarrays,
    Int128: int128s,
    object: untyped_values,
}


def _custom_type_strategy(cls: type) -> st.SearchStrategy:
    """The strategy for a msgspec ``CustomType``: the table above, else ``st.from_type(cls)``.

    Raises ``InvalidArgument`` naming the class when neither knows it.
    """
    for known, make in _CUSTOM.items():
        if cls is known:
            return make()
    try:
        strategy = st.from_type(cls)
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
    overrides: Optional[Mapping[str, Any]] = None,
    registry: Optional[SemanticRegistry] = DEFAULT_REGISTRY,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
    batch_field: Optional[str] = "rids",
):
    builder = _builder_for(_Options(registry, pickle_wrappers, surrogates, batch_field))
    return builder.draw_struct(draw, cls, 0, overrides)


def _check_supported(t: mi.Type, where: str, seen: set) -> None:
    """Fail now, naming the field, for any custom type nobody can generate."""
    if isinstance(t, mi.CustomType):
        try:
            _custom_type_strategy(t.cls)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{where}: {exc}") from None
        return
    if isinstance(t, mi.StructType):
        if t.cls in seen:
            return
        seen.add(t.cls)
        for f in t.fields:
            _check_supported(f.type, f"{t.cls.__qualname__}.{f.name}", seen)
        return
    for child in _children(t):
        _check_supported(child, where, seen)


def _children(t: mi.Type) -> Tuple[mi.Type, ...]:
    if isinstance(t, mi.UnionType):
        return t.types
    if isinstance(t, mi.Metadata):
        return (t.type,)
    if isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return (t.item_type,)
    if isinstance(t, mi.TupleType):
        return t.item_types
    if isinstance(t, mi.DictType) or type(t).__name__ == "FrozenDictType":
        return (t.key_type, t.value_type)
    if isinstance(t, (mi.TypedDictType, mi.DataclassType, mi.NamedTupleType)):
        return tuple(f.type for f in t.fields)
    return ()


def from_struct(
    cls: type,
    overrides: Optional[Mapping[str, Union[st.SearchStrategy, Callable[[FieldContext], st.SearchStrategy]]]] = None,
    *,
    registry: Optional[SemanticRegistry] = DEFAULT_REGISTRY,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
    batch_field: Optional[str] = "rids",
) -> st.SearchStrategy:
    """Instances of any ``msgspec.Struct`` class, honouring its types, constraints and meaning.

    Parameters
    ----------
    cls
        A ``msgspec.Struct`` subclass: a message of the reference schema or of
        any other implementation.
    overrides
        Field name -> strategy, or factory ``f(ctx: FieldContext) ->
        strategy`` (``None``: the type-driven default), for fields of ``cls``
        itself; takes precedence over the registry. Every key must be a field
        of ``cls``.
    registry
        The :class:`~strategies.registry.SemanticRegistry` consulted by field
        name at every nesting level (default: the one :mod:`strategies.semantic`
        fills); ``None`` for purely type-driven values.
    pickle_wrappers
        Also draw SGLang's ``PickleWrapper`` where a union admits it (holding
        a pickle of one of the union's other arms). Decoding those requires
        ``ReferenceCodec(allow_pickle=True)``.
    surrogates
        Let ``str`` values hold lone surrogates (see
        :func:`strategies.unencodable_text`): such messages are picklable but
        no msgpack codec can encode them.
    batch_field
        The field whose presence makes a struct a batch (``"rids"``); every
        list-typed field of such a struct gets one entry per request. ``None``
        disables batch handling.

    Shrinks field by field in declaration order: optional fields toward
    ``None``, defaulted fields toward their default, unions toward their first
    arm, collections toward empty, batches toward size 0, numbers toward 0.
    """
    if not (isinstance(cls, type) and issubclass(cls, msgspec.Struct)):
        raise InvalidArgument(f"cls must be a msgspec.Struct subclass, got {cls!r}")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise InvalidArgument(f"overrides must be a mapping of field name to strategy, got {overrides!r}")
        fields = cls.__struct_fields__
        for name, value in overrides.items():
            if name not in fields:
                raise InvalidArgument(
                    f"overrides has {name!r}, which is not a field of {cls.__qualname__} (fields: {', '.join(fields)})"
                )
            if not (isinstance(value, st.SearchStrategy) or callable(value)):
                raise InvalidArgument(f"overrides[{name!r}] must be a strategy or a factory(ctx), got {value!r}")
        overrides = types.MappingProxyType(dict(overrides))
    if registry is not None and not isinstance(registry, SemanticRegistry):
        raise InvalidArgument(f"registry must be a SemanticRegistry or None, got {registry!r}")
    check_bool(pickle_wrappers, "pickle_wrappers")
    check_bool(surrogates, "surrogates")
    if batch_field is not None and not isinstance(batch_field, str):
        raise InvalidArgument(f"batch_field must be a str or None, got {batch_field!r}")
    _check_supported(_struct_info(cls), cls.__qualname__, set())
    kwargs: Dict[str, Any] = {}
    if overrides:
        kwargs["overrides"] = overrides
    if registry is not DEFAULT_REGISTRY:
        kwargs["registry"] = registry
    if pickle_wrappers:
        kwargs["pickle_wrappers"] = True
    if surrogates:
        kwargs["surrogates"] = True
    if batch_field != "rids":
        kwargs["batch_field"] = batch_field
    return _from_struct(cls, **kwargs)


@named_composite("from_annotation")
def _from_annotation(draw, annotation: Any, registry, pickle_wrappers: bool, surrogates: bool):
    builder = _builder_for(_Options(registry, pickle_wrappers, surrogates, "rids"))
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
    registry: Optional[SemanticRegistry] = DEFAULT_REGISTRY,
    pickle_wrappers: bool = False,
    surrogates: bool = False,
) -> st.SearchStrategy:
    """Values of any type msgspec understands (``List[Optional[Int64]]``, a Struct, ...).

    The same rules as :func:`from_struct`; structs met inside use ``registry``.
    Shrinks as :func:`from_struct` describes.
    """
    try:
        info = _annotation_info(annotation)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"annotation {annotation!r} is not a type msgspec understands: {exc}") from None
    if registry is not None and not isinstance(registry, SemanticRegistry):
        raise InvalidArgument(f"registry must be a SemanticRegistry or None, got {registry!r}")
    check_bool(pickle_wrappers, "pickle_wrappers")
    check_bool(surrogates, "surrogates")
    _check_supported(info, repr(annotation), set())
    return _from_annotation(annotation, registry=registry, pickle_wrappers=pickle_wrappers, surrogates=surrogates)
