"""The equivalence contract: what "identical behaviour" means, in one place.

A codec conforms when the message it decodes is *equivalent* to the message
pickle decodes. Naive ``==`` cannot say that: ``True == 1``, ``0.0 == -0.0``,
``array('q', [1]) == array('l', [1])``, ``(1, 2) == torch.Size([1, 2])`` and
``float('nan') != float('nan')`` all mislead. This module defines the relation
exactly, implements it (:func:`compare`, :func:`assert_equivalent`), and lists
the only differences the reference codec is allowed to introduce
(:class:`Normalisation`). Nothing outside that list is tolerated.

Usage::

    from conformance.equivalence import assert_equivalent, compare

    assert_equivalent(pickle_decoded, codec_decoded, context="reference")
    difference = compare(expected, actual)   # None, or the first Difference
    print(difference)                        # one line, see below
    every = differences(expected, actual)    # every Difference, in walk order (bounded)

The rules
=========

``compare(expected, actual)`` walks both values depth first, in a fixed order,
and returns the first place where a rule below fails, as a :class:`Difference`
whose ``path`` names it (``$`` is the root)::

    $.output_token_logprobs_val[0][1]: float bits differ: got -0.18000000000000002, expected -0.18

``$.name`` is a struct or dataclass field, ``[3]`` a sequence or array index
(``[1, 0]`` in an object ndarray), ``['pixel_values']`` a dict key (always
``[repr(key)]``, shortened past 80 characters, so ``[1]`` and ``['1']``
differ). ``reason`` says what differs; ``got`` is always the actual value (the
codec's), ``expected`` the reference's. At every position:

1.  **Exact type.** ``type(actual) is type(expected)``, always checked first.
    ``True`` is not ``1``, ``1`` is not ``1.0``, a tuple is not a list,
    ``torch.Size`` is not a tuple, ``np.float32`` is neither ``float`` nor
    ``np.float64``, ``Int128`` is not ``int``, ``bytes`` is not ``str``,
    ``None`` is not ``[]``, an enum member is not its value, and two struct
    classes with the same fields are still two classes.
2.  **Floats** (``float``, and the parts of ``complex``) are equal when their
    IEEE-754 binary64 bits are equal, as ``struct.pack('<d', x)`` gives them.
    So ``-0.0`` differs from ``0.0``, NaN equals a NaN *with the same payload*,
    and NaNs whose payload or sign bits differ are different. This is strict
    on purpose: pickle keeps the payload bits exactly, so a conforming codec
    must too (msgpack float64 does).
3.  **int, str, bytes, bool** (same exact type): ``==``. int subclasses such as
    ``Int128`` compare by value once their type matched.
4.  **Sequences** (``list``, ``tuple``, ``torch.Size``, namedtuples): same
    length, then item by item in order.
5.  **Dicts**: the same keys *in the same order* (insertion order is part of a
    dict's behaviour and pickle keeps it), keys matched with these same rules
    (``1``, ``True``, ``1.0`` and ``'1'`` are four different keys); then the
    values, in key order. A ``defaultdict`` also keeps its ``default_factory``.
6.  **Sets and frozensets**: the same members, matched with these rules
    (``{1}`` is not ``{True}``, ``{0.0}`` is not ``{-0.0}``); iteration order is
    not compared (it is the hash table's, not the value's).
7.  **Enum members**: the same member (``is``).
8.  **msgspec Structs**: the same class, then field by field in declaration
    order (``$.field``). **Dataclasses** likewise, in ``fields()`` order.
9.  **array.array**: the same typecode (``'q'`` is not ``'l'`` even where both
    are 8 bytes), the same length, the same item bytes (``$.ids[5]`` names the
    first differing item).
10. **torch.Tensor** (and ``torch.nn.Parameter``, after rule 1), in
    this order: ``dtype``; ``shape`` (also of empty tensors: ``(0, 3)``,
    ``(3, 0)`` and ``(0,)`` differ); ``device`` (``cuda:1`` is not ``cpu``);
    ``requires_grad``; ``layout`` (strided, sparse); then the values bit for
    bit: the raw bytes of ``t.detach().cpu().contiguous()`` viewed as uint8
    (lazy conjugate/negative views resolved first; sparse tensors compared
    dense; a ``meta`` tensor has no values). Then the **memory layout**
    (strides of dimensions longer than 1, storage offset, conjugate and
    negative view bits) and the **storage flags** (whether the storage is
    resizable, that is, owned rather than borrowed from a foreign buffer): both
    must match unless a normalisation below allows the difference. Quantized
    tensors have no rule and raise ``TypeError``.
11. **numpy.ndarray**: ``dtype`` with byte order, field names, field offsets and
    sub-dtypes (``dtype.str`` *and* ``dtype.descr`` must both be equal: ``'<i8'``
    is not ``'>i8'``, ``[('a', '<i4')]`` is not ``[('b', '<i4')]``); ``shape``;
    the values bit for bit (the bytes of ``np.ascontiguousarray(a)``, padding
    of structured dtypes included; object arrays element by element with these
    rules). Then the **memory layout** (strides of dimensions longer than 1)
    and the **flags** (``writeable``, ``owndata``), unless a normalisation
    allows the difference.
12. **numpy scalars** (``np.generic``): the same type (rule 1), the same dtype
    (``dtype.str`` and ``dtype.descr``; datetime units included) and the same
    bytes (``tobytes()``).
13. **Mappings that are not dicts** (``collections.abc.Mapping``: a
    ``UserDict``, ``MappingProxyType``, an engine's ``UserDict`` subclass): the
    same class (rule 1), then as rule 5, keys in order and values. Their own
    ``==`` is not used: it may raise (on tensors) or call unequal things equal.
14. **Registered types** (:func:`register_rule`): the value the type's rule
    projects (its fields, say) is compared under these same rules, the path
    going on below it.
15. **Objects without a value** ``__eq__`` (the class keeps ``object.__eq__``):
    the same class, then their attributes (``__dict__``, then ``__slots__``
    in class order) by name (``$.name``): the same names in the same order and
    equivalent values. Identity is not a value: two such objects with equal
    attributes are equivalent. An object with no attributes at all (a
    function, a C type such as ``torch.dtype``) equals only itself.
16. **Anything else**: the same type and ``expected == actual`` is true.
    Subclasses of ``numpy.ndarray`` and of ``torch.Tensor`` (other than
    ``Parameter``) have no rule and raise ``TypeError``: the state they add
    is unknown here.

``differences(expected, actual, limit=N)`` walks the same way but does not
stop at the first failing check: it records it, does not descend into that
pair, and carries on with the rest, so two bugs in one message (a tuple
turned into a list *and* a dropped ``requires_grad``) are both reported. A
tensor whose dtype, shape, device, ``requires_grad`` or layout differ reports
each of those aspects. The first element is always what :func:`compare` returns.

Not part of a value, so never compared: object identity and sharing (pickle
keeps two references to one list as one list; a codec may send two copies),
the capacity of a storage beyond the tensor's own bytes, and the order a set
iterates in.

Allowed normalisations
======================

Differences a conforming codec may introduce, each an object of this module
that :func:`compare` takes in ``normalisations=``. Pass a subset (``()`` for
none) to prove which normalisation a case depends on.

``contiguous_tensor`` (:data:`CONTIGUOUS_TENSOR`, default)
    A tensor may arrive contiguous and compact: strides, storage offset and
    conjugate/negative view bits are not compared when the decoded tensor is
    contiguous with no lazy view bits (its dtype, shape, device, requires_grad
    and values still are). Reason: the wire carries C-order element bytes, and
    strides are a memory layout, not a value. This is a *deliberate departure
    from pickle*: torch's pickling keeps strides, storage offset and the
    stride-0 storage of an ``expand()``-ed tensor, so a transposed tensor
    unpickles transposed. A non-contiguous decoded tensor whose strides differ
    is still a difference.

``contiguous_ndarray`` (:data:`CONTIGUOUS_NDARRAY`, default)
    An ndarray may arrive C-contiguous: strides and memory order are not
    compared when the decoded array is C-contiguous. Reason: the wire carries
    C-order bytes. Pickle itself already rematerialises a sliced array
    C-contiguous, but keeps Fortran order; the reference does not.

``ndarray_writeable`` (:data:`NDARRAY_WRITEABLE`, default)
    The ``writeable`` and ``owndata`` flags of a decoded ndarray, and whether a
    decoded tensor's storage is resizable (owned) or borrowed, are not
    compared. Reason: zero-copy decoding (out-of-band frames, pickle protocol 5
    buffers, ``torch.frombuffer``) yields arrays and tensors that alias the
    received frame; whether memory is owned is a property of the transport, not
    of the message. Pickle is not consistent here either: protocol 5 decodes
    read-only arrays when its buffers are ``bytes``.

Cost: the walk is iterative, so nesting depth is unbounded (recursion is used
only to key set members and dict keys), and a pair of containers met twice
(shared, or a cycle that pickle rebuilt) is walked once. A list, tuple or dict
made only of exact builtins (logprob rows, finish reasons) is compared in bulk,
as one byte string written in C (see ``_BuiltinPickler``), and walked only when
that finds a difference or cannot decide; tensors and arrays are compared by
one ``memcmp`` of their bytes. A 256-request ``BatchTokenIDOutput`` compares
in less time than the reference codec takes to decode it.

Note on the expected side: pickle has normalisations of its own (numpy
``longlong`` arrays and scalars unpickle as ``int64``, sliced arrays as
C-contiguous), which is why the expected value should be what pickle
*decodes*, not the object that was sent.
"""

from __future__ import annotations

import collections.abc
import ctypes
import ctypes.util
import dataclasses
import enum
import io
import pickle
import re
import reprlib
import struct
import sys
from array import array
from collections import defaultdict
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Tuple

import msgspec
import numpy as np
import torch

__all__ = [
    "compare",
    "differences",
    "register_rule",
    "assert_equivalent",
    "Difference",
    "Normalisation",
    "CONTIGUOUS_TENSOR",
    "CONTIGUOUS_NDARRAY",
    "NDARRAY_WRITEABLE",
    "DEFAULT_NORMALISATIONS",
    "NORMALISATIONS",
]


# --- public types -------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class Difference:
    """The first place where two values are not equivalent.

    Attributes
    ----------
    path
        Where, from the root ``$``: ``$.field``, ``[index]``, ``[repr(key)]``.
    expected, actual
        The two differing values at ``path``, or the differing aspect of them
        (a dtype, a device, a shape, a description of a tensor element).
    reason
        What differs, short: ``"type differs: list instead of tuple"``,
        ``"float bits differ"``, ``"tensor device differs"``.
    path_shape
        ``path`` with every index and key replaced by ``[*]``
        (``$.output_token_logprobs_val[*][*]``): the same bug met in another
        row or under another key has the same shape.

    ``str(difference)`` is one line: ``path: reason: got ACTUAL, expected EXPECTED``.
    """

    path: str
    expected: Any
    actual: Any
    reason: str
    path_shape: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}: {_got_expected(self.actual, self.expected)}"


@dataclasses.dataclass(frozen=True, eq=False)
class Normalisation:
    """A difference the contract allows, with the reason it is allowed.

    Attributes
    ----------
    name
        Short identifier (``"contiguous_tensor"``).
    aspect
        The part of a value it concerns: ``"tensor layout"``, ``"ndarray
        layout"`` or ``"buffer flags"``. Aspects are compared only after
        everything else about the value (type, dtype, shape, values) matched.
    reason
        Why a codec may differ from pickle in this aspect.
    permits
        ``permits(expected, actual) -> bool``: called only when ``aspect``
        differs between the two; true when this normalisation explains it.
    """

    name: str
    aspect: str
    reason: str
    permits: Callable[[Any, Any], bool]

    def __repr__(self) -> str:
        return f"Normalisation({self.name!r})"


_TENSOR_LAYOUT = "tensor layout"
_NDARRAY_LAYOUT = "ndarray layout"
_BUFFER_FLAGS = "buffer flags"
_ASPECTS = (_TENSOR_LAYOUT, _NDARRAY_LAYOUT, _BUFFER_FLAGS)


def _arrives_contiguous_tensor(expected: torch.Tensor, actual: torch.Tensor) -> bool:
    return actual.is_contiguous() and not actual.is_conj() and not actual.is_neg()


def _arrives_c_contiguous(expected: np.ndarray, actual: np.ndarray) -> bool:
    return bool(actual.flags.c_contiguous)


def _always(expected: Any, actual: Any) -> bool:
    return True


CONTIGUOUS_TENSOR = Normalisation(
    name="contiguous_tensor",
    aspect=_TENSOR_LAYOUT,
    reason=(
        "the wire carries a tensor's elements as C-order bytes; strides, storage offset and lazy "
        "conjugate/negative bits are memory layout, not value. Deliberately unlike pickle, which keeps "
        "strides (a transposed tensor unpickles transposed, an expanded one keeps stride 0)"
    ),
    permits=_arrives_contiguous_tensor,
)

CONTIGUOUS_NDARRAY = Normalisation(
    name="contiguous_ndarray",
    aspect=_NDARRAY_LAYOUT,
    reason=(
        "the wire carries an ndarray as C-order bytes; strides and memory order (Fortran, sliced) are "
        "memory layout, not value. Pickle already makes sliced arrays C-contiguous but keeps Fortran order"
    ),
    permits=_arrives_c_contiguous,
)

NDARRAY_WRITEABLE = Normalisation(
    name="ndarray_writeable",
    aspect=_BUFFER_FLAGS,
    reason=(
        "zero-copy decoding makes arrays and tensors that alias the received frame (read-only or "
        "borrowed, non-resizable storage); whether memory is owned is the transport's business, not the "
        "message's. Pickle protocol 5 with bytes buffers also decodes read-only arrays"
    ),
    permits=_always,
)

#: The normalisations the reference codec relies on, and the only ones allowed by default.
DEFAULT_NORMALISATIONS: Tuple[Normalisation, ...] = (CONTIGUOUS_TENSOR, CONTIGUOUS_NDARRAY, NDARRAY_WRITEABLE)

#: Every normalisation of the contract, by name (for command-line options and reports).
NORMALISATIONS: Mapping[str, Normalisation] = MappingProxyType({n.name: n for n in DEFAULT_NORMALISATIONS})


# --- public functions ---------------------------------------------------------


def compare(
    expected: Any,
    actual: Any,
    *,
    normalisations: Iterable[Normalisation] = DEFAULT_NORMALISATIONS,
) -> Optional[Difference]:
    """``None`` when ``actual`` is equivalent to ``expected``, else their first :class:`Difference`.

    Parameters
    ----------
    expected
        The reference value: what pickle decodes.
    actual
        The value under test: what the codec decodes.
    normalisations
        The :class:`Normalisation` objects that may explain a difference;
        :data:`DEFAULT_NORMALISATIONS` unless given. ``()`` is the strictest.

    The walk is iterative (no recursion limit on nesting) and depth first:
    struct fields in declaration order, items in index order, dict entries in
    key order, and for one value its type, then its own attributes (length,
    keys, dtype, shape, device, ...), then its contents. The first failing
    check is returned, so the result is deterministic.

    Raises
    ------
    TypeError
        ``normalisations`` holds something that is not a :class:`Normalisation`,
        or a value has no equivalence rule (quantized tensors; ``==`` failing).
    """
    found = _Walk(_by_aspect(normalisations), limit=1).run(expected, actual)
    return found[0] if found else None


def differences(
    expected: Any,
    actual: Any,
    *,
    limit: int = 64,
    normalisations: Iterable[Normalisation] = DEFAULT_NORMALISATIONS,
) -> List[Difference]:
    """Every :class:`Difference` between ``expected`` and ``actual``, in walk order, at most ``limit``.

    The same walk and rules as :func:`compare`, which returns the first of
    these. Below a pair that differs nothing more is compared (a list that is
    a tuple is not also compared item by item), so each entry is a distinct
    place. ``[]`` means equivalent.

    Raises
    ------
    ValueError
        ``limit`` is not a positive int.
    TypeError
        As :func:`compare`.
    """
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    return _Walk(_by_aspect(normalisations), limit=limit).run(expected, actual)


def assert_equivalent(
    expected: Any,
    actual: Any,
    *,
    context: str = "",
    normalisations: Iterable[Normalisation] = DEFAULT_NORMALISATIONS,
) -> None:
    """Raise ``AssertionError`` naming the first difference (see :func:`compare`).

    The message is the difference's line, followed by ``[context]`` when a
    context (the codec's name, the example) is given::

        $.routed_experts[0]: tensor device differs: got cpu, expected cuda:1 [reference]
    """
    __tracebackhide__ = True
    difference = compare(expected, actual, normalisations=normalisations)
    if difference is not None:
        raise AssertionError(f"{difference} [{context}]" if context else str(difference))


def register_rule(cls: type, project: Callable[[Any], Any]) -> None:
    """Compare instances of exactly ``cls`` by ``project(instance)``, under the rules above.

    For a type whose own ``==`` is missing or misleading (an engine's result
    wrapper, a class with a cache attribute that is not part of its value):
    ``register_rule(UtilityResult, lambda r: r.result)``. Both sides are
    projected; the projection is compared with every rule, the path going on
    below it. The exact type is still checked first (rule 1). Registering a
    type twice replaces its rule; a rule for a type this module already has a
    rule for (``list``, ``torch.Tensor``, ...) raises ``ValueError``: the
    contract for those is fixed.

    Raises
    ------
    TypeError
        ``cls`` is not a class or ``project`` is not callable.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_rule needs a class, got {cls!r}")
    if not callable(project):
        raise TypeError(f"register_rule needs a callable projection, got {project!r}")
    if cls in _FIXED or cls in _EXACT or cls is float or issubclass(cls, msgspec.Struct):
        raise ValueError(f"{cls.__qualname__} has a fixed rule in the equivalence contract; it cannot be replaced")
    _PROJECTIONS[cls] = project
    _HANDLERS.pop(cls, None)  # a handler resolved before registration would hide the rule


# --- normalisation bookkeeping ------------------------------------------------


def _by_aspect(normalisations: Iterable[Normalisation]) -> Dict[str, Tuple[Normalisation, ...]]:
    if isinstance(normalisations, (str, Normalisation)):
        raise TypeError(
            f"normalisations must be an iterable of Normalisation objects, got {normalisations!r}; "
            "pass a tuple such as (CONTIGUOUS_TENSOR,) or () for none"
        )
    try:
        items = tuple(normalisations)
    except TypeError:
        raise TypeError(
            f"normalisations must be an iterable of Normalisation objects, got {type(normalisations).__qualname__}"
        ) from None
    table: Dict[str, List[Normalisation]] = {aspect: [] for aspect in _ASPECTS}
    for item in items:
        if not isinstance(item, Normalisation):
            hint = f"; use equivalence.NORMALISATIONS[{item!r}]" if isinstance(item, str) else ""
            raise TypeError(f"normalisations must hold Normalisation objects, got {item!r}{hint}")
        if item.aspect not in table:
            raise ValueError(f"normalisation {item.name!r} has unknown aspect {item.aspect!r} (one of {_ASPECTS})")
        table[item.aspect].append(item)
    return {aspect: tuple(found) for aspect, found in table.items()}


# --- rendering ----------------------------------------------------------------


class _Text(str):
    """A description shown as is (no quotes), used for aspects and elements."""

    __slots__ = ()


class _Key:
    """A dict key as a path segment: ``[repr(key)]``."""

    __slots__ = ("key",)

    def __init__(self, key: Any):
        self.key = key


class _At:
    """A multi-dimensional index as a path segment: ``[1, 0]``."""

    __slots__ = ("index",)

    def __init__(self, index: Tuple[int, ...]):
        self.index = index


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class _ShortRepr(reprlib.Repr):
    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 4
        self.maxtuple = self.maxlist = self.maxarray = 8
        self.maxdict = self.maxset = self.maxfrozenset = self.maxdeque = 6
        self.maxstring = 80
        self.maxlong = 60
        self.maxother = 120

    def repr_Tensor(self, x: torch.Tensor, level: int) -> str:
        return _tensor_summary(x)

    repr_Parameter = repr_Tensor

    def repr_ndarray(self, x: np.ndarray, level: int) -> str:
        return f"ndarray(shape={x.shape}, dtype={_dtype_text(x.dtype)})"

    def repr_instance(self, x: Any, level: int) -> str:
        if isinstance(x, torch.Tensor):
            return _tensor_summary(x)
        if isinstance(x, np.ndarray):
            return self.repr_ndarray(x, level)
        if isinstance(x, msgspec.Struct):  # a message's own repr can run to megabytes
            fields = type(x).__struct_fields__
            if level <= 0:
                return f"{type(x).__qualname__}(...)"
            shown = [f"{f}={self.repr1(getattr(x, f), level - 1)}" for f in fields[:4]]
            return f"{type(x).__qualname__}({', '.join(shown)}{', ...' if len(fields) > 4 else ''})"
        try:
            text = _ADDRESS.sub("", repr(x))  # an address differs run to run and says nothing
        except Exception:  # a broken or too deep repr must not hide the difference
            text = f"<{type(x).__qualname__} object>"
        if len(text) > self.maxother:
            half = (self.maxother - 3) // 2
            text = text[:half] + "..." + text[len(text) - half :]
        return text


_short_repr = _ShortRepr()


def _show(value: Any) -> str:
    if type(value) is _Text:
        return value
    if isinstance(value, (torch.device, torch.dtype)):
        return str(value)
    if isinstance(value, np.dtype):
        return _dtype_text(value)
    try:
        return _short_repr.repr(value)
    except RecursionError:
        return f"<{type(value).__qualname__} nested too deeply to show>"


def _got_expected(actual: Any, expected: Any) -> str:
    """The one phrasing of every failure: ``got ACTUAL, expected EXPECTED``."""
    return f"got {_show(actual)}, expected {_show(expected)}"


def _tensor_summary(t: torch.Tensor) -> str:
    extra = ", requires_grad=True" if t.requires_grad else ""
    kind = type(t).__name__ if type(t) is not torch.Tensor else "tensor"
    return f"{kind}(shape={list(t.shape)}, dtype={str(t.dtype)[6:]}, device={t.device}{extra})"


def _dtype_text(dtype: np.dtype) -> str:
    return str(dtype.descr) if dtype.fields is not None or dtype.subdtype is not None else dtype.str


def _type_name(t: type, other: type) -> str:
    name = t.__qualname__
    root = t.__module__.partition(".")[0]
    if root == "torch" and getattr(torch, name, None) is t:
        return f"torch.{name}"
    if root == "numpy" and getattr(np, name, None) is t:
        return f"np.{name}"
    if name == other.__qualname__ or root in ("torch", "numpy"):
        name = f"{t.__module__}.{name}"
    return name


def _render_path(node: Any) -> str:
    segments = []
    while node is not None:
        node, segment = node
        segments.append(segment)
    out = ["$"]
    for segment in reversed(segments):
        if type(segment) is int:
            out.append(f"[{segment}]")
        elif type(segment) is str:
            out.append(f".{segment}")
        elif type(segment) is _Key:
            out.append(f"[{_show(segment.key)}]")
        else:
            out.append(f"[{', '.join(map(str, segment.index))}]")
    return "".join(out)


def _render_shape(node: Any) -> str:
    segments = []
    while node is not None:
        node, segment = node
        segments.append(f".{segment}" if type(segment) is str else "[*]")
    return "$" + "".join(reversed(segments))


def _difference(path: Any, reason: str, expected: Any, actual: Any) -> Difference:
    return Difference(_render_path(path), expected, actual, reason, _render_shape(path))


# --- scalars --------------------------------------------------------------------

_F64 = struct.Struct("<d").pack
_C128 = struct.Struct("<dd").pack
#: Types whose ``==`` is exact once the types are identical.
_EXACT = frozenset({int, str, bytes, bool, type(None)})
#: Containers worth comparing in bulk (exact types; subclasses are refused by the pickler anyway).
_BULK = (list, tuple)


def _float_text(x: float) -> _Text:
    return _Text(f"{x!r} (bits 0x{_F64(x)[::-1].hex()})")


def _float_difference(path: Any, e: float, a: float) -> Difference:
    if repr(e) == repr(a):  # NaNs with other payloads: show the bits
        return _difference(path, "float bits differ", _float_text(e), _float_text(a))
    return _difference(path, "float bits differ", e, a)


def _first_mismatch(e: Any, a: Any) -> int:
    """The first index where two str or bytes differ (bisection over C-level slice compares)."""
    lo, hi = 0, min(len(e), len(a))
    if e[:hi] == a[:hi]:
        return hi
    while hi - lo > 1:  # invariant: e[:lo] == a[:lo] and e[:hi] != a[:hi]
        mid = (lo + hi) // 2
        if e[lo:mid] == a[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _exact_difference(path: Any, e: Any, a: Any) -> Difference:
    reason = f"{type(e).__qualname__} value differs"
    if type(e) in (str, bytes) and max(len(e), len(a)) > 40:
        reason += f" from index {_first_mismatch(e, a)}"
    return _difference(path, reason, e, a)


class _NotBuiltin(Exception):
    pass


class _BuiltinPickler(pickle.Pickler):
    """Pickles trees of exact builtin values only, with no memo.

    ``reducer_override`` is consulted for every object *except* exact
    ``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``list``,
    ``tuple``, ``dict``, ``set`` and ``frozenset`` (and ``bytearray``, whose
    protocol 4 form names its class, which is consulted), so raising there
    refuses everything else (subclasses, enums, numpy scalars, tensors,
    structs). For what remains, protocol 4 writes a distinct opcode per type,
    floats as their 8 IEEE bytes, containers in order; with the memo off
    (``fast``) shared objects are written in full. So two such values give
    the same bytes only if they are equivalent under the rules of this module
    (sets that iterate in different orders give different bytes: that only
    sends them to the walk).
    """

    def reducer_override(self, obj: Any) -> Any:
        raise _NotBuiltin


def _builtin_bytes(value: Any) -> Optional[bytes]:
    buffer = io.BytesIO()
    pickler = _BuiltinPickler(buffer, protocol=4)
    pickler.fast = True
    try:
        pickler.dump(value)
    except _NotBuiltin:
        return None
    except RecursionError:
        raise
    except Exception:  # cycles (ValueError in fast mode) and anything unexpected: walk it instead
        return None
    return buffer.getvalue()


def _builtin_equivalent(walk: "_Walk", e: Any, a: Any) -> bool:
    """True when ``e`` and ``a`` are certainly equivalent trees of builtins; False: walk them.

    The fast path for lists and dicts of plain values (logprob rows, finish
    reasons): the whole subtree is compared as one byte string, in C. After a
    value nested too deep for the pickler, the walk stops trying, so deep
    nesting stays linear.
    """
    if not walk.bulk:
        return False
    try:
        be = _builtin_bytes(e)
        return be is not None and be == _builtin_bytes(a)
    except RecursionError:
        walk.bulk = False
        return False


def _member_key(x: Any) -> Any:
    """A hashable key that is equal exactly when two set members or dict keys are equivalent."""
    t = type(x)
    if t is float:
        return (t, _F64(x))
    if t is complex:
        return (t, _C128(x.real, x.imag))
    if t in _EXACT or isinstance(x, enum.Enum):
        return (t, x)
    if isinstance(x, tuple):
        return (t, tuple(map(_member_key, x)))
    if isinstance(x, frozenset):
        return (t, frozenset(map(_member_key, x)))
    if isinstance(x, np.generic):
        return (t, x.dtype.str, str(x.dtype.descr), x.tobytes())
    if isinstance(x, msgspec.Struct):
        return (t, tuple(_member_key(getattr(x, f)) for f in x.__struct_fields__))
    if isinstance(x, float):
        return (t, _F64(x))
    return (t, x)


def _members_text(items: List[Any]) -> str:
    return ", ".join(_show(x) for x in items[:4]) + (f" and {len(items) - 4} more" if len(items) > 4 else "")


# --- the walk -------------------------------------------------------------------

Handler = Callable[["_Walk", Any, Any, Any], Any]  # None, a Difference or a list of them


class _Walk:
    """One comparison: an explicit stack of ``(expected, actual, path)``; paths are ``(parent, segment)`` links.

    It records differences until it has ``limit`` of them (1: :func:`compare`).
    A handler returns ``None``, one :class:`Difference`, or a list of them (a
    tensor whose metadata differs in several aspects).
    """

    __slots__ = ("norms", "stack", "bulk", "entered", "limit")

    def __init__(self, norms: Dict[str, Tuple[Normalisation, ...]], limit: int = 1):
        self.norms = norms
        self.limit = limit
        self.stack: List[Tuple[Any, Any, Any]] = []
        self.bulk = True  # whether _builtin_equivalent may be tried
        # (id(expected), id(actual)) of the containers already opened: a pair met
        # again (shared, or a cycle pickle rebuilt) is being or was compared.
        self.entered: set = set()

    def run(self, expected: Any, actual: Any) -> List[Difference]:
        stack = self.stack = [(expected, actual, None)]
        pop = stack.pop
        handlers = _HANDLERS
        found: List[Difference] = []
        limit = self.limit
        while stack:
            e, a, path = pop()
            if e is a:
                continue
            t = type(e)
            if t is not type(a):
                ta = type(a)
                found.append(_difference(path, f"type differs: {_type_name(ta, t)} instead of {_type_name(t, ta)}", e, a))
            elif t is float:
                if _F64(e) == _F64(a):
                    continue
                found.append(_float_difference(path, e, a))
            elif t in _EXACT:
                if e == a:
                    continue
                found.append(_exact_difference(path, e, a))
            else:
                handler = handlers.get(t)
                if handler is None:
                    handler = handlers[t] = _resolve_handler(t)
                difference = handler(self, e, a, path)
                if difference is None:
                    continue
                if type(difference) is list:
                    found.extend(difference)
                else:
                    found.append(difference)
            if len(found) >= limit:
                return found[:limit]
        return found

    def enter(self, e: Any, a: Any) -> bool:
        """False when this pair of containers was opened before (so it is not walked twice)."""
        key = (id(e), id(a))
        if key in self.entered:
            return False
        self.entered.add(key)
        return True

    def permitted(self, aspect: str, e: Any, a: Any) -> bool:
        return any(n.permits(e, a) for n in self.norms[aspect])

    def push_items(self, e: Any, a: Any, segments: List[Any], path: Any) -> None:
        """Push the pairs of ``e`` and ``a`` so that the first pair is compared first."""
        self.stack.extend(zip(reversed(e), reversed(a), [(path, s) for s in reversed(segments)]))


def _sequence(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    n = len(e)
    if n != len(a):
        return _difference(path, f"length differs: {len(a)} instead of {n}", e, a)
    if n and not (type(e) in _BULK and _builtin_equivalent(walk, e, a)) and walk.enter(e, a):
        walk.stack.extend(zip(reversed(e), reversed(a), [(path, i) for i in range(n - 1, -1, -1)]))
    return None


def _dict(walk: _Walk, e: dict, a: dict, path: Any) -> Optional[Difference]:
    if type(e) is dict and _builtin_equivalent(walk, e, a):
        return None
    ke, ka = list(e), list(a)
    same_keys = len(ke) == len(ka) and (
        ke == ka if _flat_exact(ke, ka) else list(map(_member_key, ke)) == list(map(_member_key, ka))
    )
    if not same_keys:
        return _dict_key_difference(path, ke, ka)
    if isinstance(e, defaultdict):
        assert isinstance(a, defaultdict)  # the walk hands a rule two values of one exact type
        if e.default_factory is not a.default_factory:
            return _difference(path, "defaultdict default_factory differs", e.default_factory, a.default_factory)
    if ke and walk.enter(e, a):
        walk.push_items(list(e.values()), list(a.values()), [_Key(k) for k in ke], path)
    return None


def _flat_exact(ke: List[Any], ka: List[Any]) -> bool:
    types = list(map(type, ke))
    return types == list(map(type, ka)) and set(types) <= _EXACT


def _dict_key_difference(path: Any, ke: List[Any], ka: List[Any]) -> Difference:
    set_e, set_a = set(map(_member_key, ke)), set(map(_member_key, ka))
    missing = [k for k in ke if _member_key(k) not in set_a]
    unexpected = [k for k in ka if _member_key(k) not in set_e]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {_members_text(missing)}")
        if unexpected:
            parts.append(f"unexpected {_members_text(unexpected)}")
        return _difference(path, f"dict keys differ: {', '.join(parts)}", ke, ka)
    if len(ke) != len(ka):
        return _difference(path, f"dict size differs: {len(ka)} instead of {len(ke)}", ke, ka)
    return _difference(path, "dict key order differs", ke, ka)


def _set(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    keys_e, keys_a = set(map(_member_key, e)), set(map(_member_key, a))
    if keys_e == keys_a and len(e) == len(a):
        return None
    missing = [x for x in e if _member_key(x) not in keys_a]
    unexpected = [x for x in a if _member_key(x) not in keys_e]
    parts = []
    if missing:
        parts.append(f"missing {_members_text(missing)}")
    if unexpected:
        parts.append(f"unexpected {_members_text(unexpected)}")
    if not parts:
        return _difference(path, f"set size differs: {len(a)} instead of {len(e)}", e, a)
    return _difference(path, f"set members differ: {', '.join(parts)}", e, a)


def _struct(walk: _Walk, e: msgspec.Struct, a: msgspec.Struct, path: Any) -> Optional[Difference]:
    fields = type(e).__struct_fields__
    if walk.enter(e, a):
        walk.push_items([getattr(e, f) for f in fields], [getattr(a, f) for f in fields], list(fields), path)
    return None


def _dataclass(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    names = [f.name for f in dataclasses.fields(e)]
    if walk.enter(e, a):
        walk.push_items([getattr(e, n) for n in names], [getattr(a, n) for n in names], names, path)
    return None


def _mapping(walk: _Walk, e: Mapping, a: Mapping, path: Any) -> Optional[Difference]:
    """A Mapping that is not a dict: compared as a dict of its items (its class already matched)."""
    return _dict(walk, dict(e.items()), dict(a.items()), path)


def _projected(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    project = _PROJECTIONS[type(e)]
    walk.stack.append((project(e), project(a), path))
    return None


def _attribute_names(x: Any) -> List[str]:
    names = list(vars(x)) if hasattr(x, "__dict__") else []
    for klass in type(x).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and slot not in names and hasattr(x, slot):
                names.append(slot)
    return names


def _attributes(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    """An object whose class has no value ``__eq__``: compared by its attributes."""
    ne, na = _attribute_names(e), _attribute_names(a)
    if not ne and not na:  # nothing to compare (a C type, a function): only identity, as ``==`` says
        return _by_value(walk, e, a, path)
    if ne != na:
        missing = [n for n in ne if n not in na]
        unexpected = [n for n in na if n not in ne]
        detail = ", ".join(p for p in (f"missing {missing}" if missing else "", f"unexpected {unexpected}" if unexpected else "") if p)
        return _difference(path, f"attributes differ: {detail or 'order differs'}", _Text(str(ne)), _Text(str(na)))
    if ne and walk.enter(e, a):
        walk.push_items([getattr(e, n) for n in ne], [getattr(a, n) for n in na], ne, path)
    return None


def _enum(walk: _Walk, e: enum.Enum, a: enum.Enum, path: Any) -> Optional[Difference]:
    if e is not a:
        return _difference(path, "enum member differs", e, a)
    return None


def _float_subclass(walk: _Walk, e: float, a: float, path: Any) -> Optional[Difference]:
    if _F64(e) != _F64(a):
        return _float_difference(path, e, a)
    return None


def _complex(walk: _Walk, e: complex, a: complex, path: Any) -> Optional[Difference]:
    if _C128(e.real, e.imag) != _C128(a.real, a.imag):
        return _difference(path, "complex bits differ", e, a)
    return None


def _no_rule(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    raise TypeError(
        f"no equivalence rule for {type(e).__module__}.{type(e).__qualname__} (at {_render_path(path)}): "
        "a subclass's own state is unknown to the contract"
    )


def _by_value(walk: _Walk, e: Any, a: Any, path: Any) -> Optional[Difference]:
    try:
        equal = bool(e == a)
    except Exception as exc:
        raise TypeError(
            f"no equivalence rule for {type(e).__qualname__} at {_render_path(path)}: == failed ({exc})"
        ) from None
    if not equal:
        return _exact_difference(path, e, a)
    return None


def _load_memcmp() -> Optional[Callable[[int, int, int], int]]:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") if sys.platform != "win32" else "msvcrt")
        memcmp = libc.memcmp
    except (OSError, AttributeError, TypeError):
        return None
    memcmp.restype = ctypes.c_int
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return memcmp


_memcmp = _load_memcmp()


def _same_memory(address_e: int, address_a: int, size: int) -> bool:
    """Whether ``size`` bytes at two addresses of this process are equal (libc ``memcmp``, no copy)."""
    if _memcmp is not None:
        return _memcmp(address_e, address_a, size) == 0
    return ctypes.string_at(address_e, size) == ctypes.string_at(address_a, size)


# --- array.array ------------------------------------------------------------------


def _array(walk: _Walk, e: array, a: array, path: Any) -> Optional[Difference]:
    if e.typecode != a.typecode:
        return _difference(path, "array typecode differs", e.typecode, a.typecode)
    if len(e) != len(a):
        return _difference(path, f"length differs: {len(a)} instead of {len(e)}", e, a)
    be, ba = e.tobytes(), a.tobytes()
    if be == ba:
        return None
    size = e.itemsize
    i = _first_mismatch(be, ba) // size
    x, y = e[i], a[i]
    if type(x) is float and repr(x) == repr(y):
        x, y = _float_text(x), _float_text(y)
    return _difference((path, i), f"array item bits differ (typecode {e.typecode!r})", x, y)


# --- numpy ------------------------------------------------------------------------


#: How ``int.from_bytes`` reads an element's bytes.
_ByteOrder = Literal["little", "big"]


def _dtype_differs(e: np.dtype, a: np.dtype) -> bool:
    return e.str != a.str or e.descr != a.descr


def _element_text(value: Any, raw: bytes, byteorder: Optional[_ByteOrder]) -> _Text:
    """An element and its bits (``byteorder``: how to read them as a number; None: show the bytes)."""
    if byteorder is not None and len(raw) <= 16:
        bits = f"bits 0x{int.from_bytes(raw, byteorder):0{2 * len(raw)}x}"
    else:
        bits = f"bytes {raw[:32].hex()}{'...' if len(raw) > 32 else ''}"
    return _Text(f"{_show(value)} ({bits})")


def _numpy_byteorder(dtype: np.dtype) -> Optional[_ByteOrder]:
    """How to read one element's bytes as a number; None where they are not one number."""
    if dtype.fields is not None or dtype.subdtype is not None or dtype.kind in "OSUV":
        return None
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big"):
        return "big"
    if dtype.byteorder in ("<", "="):
        return "little"
    return sys.byteorder  # '|': one byte


def _nd_bytes(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _nd_item(x: np.ndarray, flat: int) -> Any:
    return np.ascontiguousarray(x).reshape(-1)[flat]


def _ndarray_layout(x: np.ndarray) -> Tuple[int, ...]:
    if x.size == 0:
        return ()
    return tuple(s for s, n in zip(x.strides, x.shape) if n > 1)


def _ndarray(walk: _Walk, e: np.ndarray, a: np.ndarray, path: Any) -> Optional[Difference]:
    de, da = e.dtype, a.dtype
    if _dtype_differs(de, da):
        if de.names and not da.names:
            return _difference(path, "ndarray dtype differs: a structured dtype came back without its fields", de, da)
        return _difference(path, "ndarray dtype differs", de, da)
    if e.shape != a.shape:
        if e.ndim == 0 and a.shape == (1,):
            # its own reason, so that a list line can name this one shape change and no other
            return _difference(path, "ndarray shape differs: a scalar array came back as a one-element array", e.shape, a.shape)
        return _difference(path, "ndarray shape differs", e.shape, a.shape)
    if de.hasobject:
        if e.size:
            indices = list(np.ndindex(e.shape))
            walk.push_items(list(e.flat), list(a.flat), [_At(i) for i in indices], path)
    elif e.size and de.itemsize:
        if e.flags.c_contiguous and a.flags.c_contiguous:
            same = _same_memory(e.ctypes.data, a.ctypes.data, e.nbytes)
        else:
            same = np.array_equal(_nd_bytes(e), _nd_bytes(a))
        if not same:
            be, ba = _nd_bytes(e), _nd_bytes(a)
            byte = int(np.flatnonzero(be != ba)[0])
            flat = byte // de.itemsize
            index = tuple(int(i) for i in np.unravel_index(flat, e.shape))
            size = de.itemsize
            order = _numpy_byteorder(de)
            x = _element_text(_nd_item(e, flat), be[flat * size : (flat + 1) * size].tobytes(), order)
            y = _element_text(_nd_item(a, flat), ba[flat * size : (flat + 1) * size].tobytes(), order)
            return _difference(path, f"ndarray values differ at {list(index)}", x, y)
    le, la = _ndarray_layout(e), _ndarray_layout(a)
    if le != la and not walk.permitted(_NDARRAY_LAYOUT, e, a):
        return _difference(path, "ndarray strides differ", _Text(f"strides {e.strides}"), _Text(f"strides {a.strides}"))
    fe = (bool(e.flags.writeable), bool(e.flags.owndata))
    fa = (bool(a.flags.writeable), bool(a.flags.owndata))
    if fe != fa and not walk.permitted(_BUFFER_FLAGS, e, a):
        return _difference(
            path,
            "ndarray flags differ",
            _Text(f"writeable={fe[0]}, owndata={fe[1]}"),
            _Text(f"writeable={fa[0]}, owndata={fa[1]}"),
        )
    return None


def _numpy_scalar(walk: _Walk, e: np.generic, a: np.generic, path: Any) -> Optional[Difference]:
    if _dtype_differs(e.dtype, a.dtype):
        return _difference(path, "numpy scalar dtype differs", e.dtype, a.dtype)
    be, ba = e.tobytes(), a.tobytes()
    if be != ba:
        order = _numpy_byteorder(e.dtype)
        if repr(e) == repr(a):
            x, y = _element_text(e, be, order), _element_text(a, ba, order)
            return _difference(path, "numpy scalar bits differ", x, y)
        return _difference(path, "numpy scalar bits differ", e, a)
    return None


# --- torch ------------------------------------------------------------------------


def _tensor_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's element bytes in C order, as a flat uint8 tensor on its own device."""
    t = t.detach()
    if t.layout is not torch.strided:
        t = t.to_dense()
    flat = t.resolve_conj().resolve_neg().contiguous().reshape(-1)
    if flat.numel() and flat.stride(0) != 1:
        # torch deems size-1 tensors contiguous whatever their stride; a byte view needs 1.
        flat = torch.empty_like(flat, memory_format=torch.contiguous_format).copy_(flat)
    return flat.view(torch.uint8)


def _tensor_layout(t: torch.Tensor) -> Tuple[Any, ...]:
    strides = () if t.numel() == 0 else tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)
    offset = t.storage_offset() if t.numel() else 0
    return (strides, offset, t.is_conj(), t.is_neg())


_LAYOUT_PARTS = ("strides", "storage offset", "conjugate view bit", "negative view bit")


def _layout_text(t: torch.Tensor) -> _Text:
    text = f"strides {tuple(t.stride())}, storage offset {t.storage_offset()}"
    if t.is_conj():
        text += ", conj view"
    if t.is_neg():
        text += ", neg view"
    return _Text(text)


def _storage_resizable(t: torch.Tensor) -> Optional[bool]:
    try:
        return bool(t.untyped_storage().resizable())
    except (RuntimeError, NotImplementedError):  # layouts and backends without one storage
        return None


def _tensor(walk: _Walk, e: torch.Tensor, a: torch.Tensor, path: Any) -> Any:
    meta = []  # every differing aspect: a dropped device and a dropped requires_grad are two bugs
    if e.dtype != a.dtype:
        meta.append(_difference(path, "tensor dtype differs", e.dtype, a.dtype))
    if e.shape != a.shape:
        meta.append(_difference(path, "tensor shape differs", tuple(e.shape), tuple(a.shape)))
    if e.device != a.device:
        meta.append(_difference(path, "tensor device differs", e.device, a.device))
    if e.requires_grad != a.requires_grad:
        meta.append(_difference(path, "tensor requires_grad differs", e.requires_grad, a.requires_grad))
    if e.layout != a.layout:
        meta.append(_difference(path, "tensor layout differs", _Text(str(e.layout)), _Text(str(a.layout))))
    if meta:
        return meta
    if e.is_quantized:
        raise TypeError(f"no equivalence rule for quantized tensors (at {_render_path(path)})")
    if e.layout is not torch.strided:
        if e.numel() and e.device.type != "meta" and not torch.equal(_tensor_bytes(e), _tensor_bytes(a)):
            return _tensor_value_difference(path, e, a, _tensor_bytes(e), _tensor_bytes(a))
        return None
    plain = (
        e.device.type == "cpu"
        and e.is_contiguous()
        and a.is_contiguous()
        and not (e.is_conj() or a.is_conj() or e.is_neg() or a.is_neg())
    )
    if plain:  # the common case: compare the two memories in place
        size = e.numel() * e.element_size()
        if size and not _same_memory(e.data_ptr(), a.data_ptr(), size):
            return _tensor_value_difference(path, e, a, _tensor_bytes(e), _tensor_bytes(a))
        layouts_differ = size and e.storage_offset() != a.storage_offset()
    else:
        if e.numel() and e.device.type != "meta":
            be, ba = _tensor_bytes(e), _tensor_bytes(a)
            if not torch.equal(be, ba):
                return _tensor_value_difference(path, e, a, be, ba)
        layouts_differ = _tensor_layout(e) != _tensor_layout(a)
    if layouts_differ and not walk.permitted(_TENSOR_LAYOUT, e, a):
        what = next(name for name, x, y in zip(_LAYOUT_PARTS, _tensor_layout(e), _tensor_layout(a)) if x != y)
        return _difference(path, f"tensor {what} differs", _layout_text(e), _layout_text(a))
    re_, ra = _storage_resizable(e), _storage_resizable(a)
    if re_ != ra and not walk.permitted(_BUFFER_FLAGS, e, a):
        return _difference(
            path,
            "tensor storage ownership differs",
            _Text(f"resizable storage={re_}"),
            _Text(f"resizable storage={ra}"),
        )
    return None


def _tensor_value_difference(
    path: Any, e: torch.Tensor, a: torch.Tensor, be: torch.Tensor, ba: torch.Tensor
) -> Difference:
    be, ba = be.cpu(), ba.cpu()
    size = e.element_size()
    byte = int(torch.nonzero(be != ba)[0, 0])
    flat = byte // size
    index, rest = [], flat
    for n in reversed(e.shape):
        index.append(rest % n)
        rest //= n
    index.reverse()

    def element(t: torch.Tensor, raw: torch.Tensor) -> _Text:
        value = t.detach().resolve_conj().resolve_neg()
        if value.layout is not torch.strided:
            value = value.to_dense()
        value = value.cpu().reshape(-1)[flat]
        shown: Any
        try:
            shown = value.item()
        except (RuntimeError, TypeError):  # dtypes without a Python scalar (some float8, uint sub-byte)
            shown = _Text(str(value))
        return _element_text(shown, bytes(raw[flat * size : (flat + 1) * size].tolist()), sys.byteorder)

    return _difference(path, f"tensor values differ at {index}", element(e, be), element(a, ba))


# --- dispatch ---------------------------------------------------------------------

#: Rules registered with :func:`register_rule`, by exact class.
_PROJECTIONS: Dict[type, Callable[[Any], Any]] = {}

_HANDLERS: Dict[type, Handler] = {
    list: _sequence,
    tuple: _sequence,
    torch.Size: _sequence,
    dict: _dict,
    set: _set,
    frozenset: _set,
    array: _array,
    np.ndarray: _ndarray,
    torch.Tensor: _tensor,
    complex: _complex,
}


def _resolve_handler(t: type) -> Handler:
    """The rule for a type not in ``_HANDLERS``; the order matters (np.float64 is a float, IntEnum an int)."""
    if t in _PROJECTIONS:
        return _projected
    if issubclass(t, msgspec.Struct):
        return _struct
    if issubclass(t, enum.Enum):
        return _enum
    if issubclass(t, np.generic):
        return _numpy_scalar
    if issubclass(t, torch.Tensor):
        return _tensor if issubclass(t, torch.nn.Parameter) else _no_rule
    if issubclass(t, np.ndarray):
        return _no_rule
    if issubclass(t, (list, tuple)):
        return _sequence
    if issubclass(t, dict):
        return _dict
    if issubclass(t, (set, frozenset)):
        return _set
    if dataclasses.is_dataclass(t):
        return _dataclass
    if issubclass(t, float):
        return _float_subclass
    if issubclass(t, complex):
        return _complex
    if issubclass(t, collections.abc.Mapping):
        return _mapping
    if t.__eq__ is object.__eq__:
        return _attributes
    return _by_value

#: Types whose rule is part of the contract itself (see :func:`register_rule`).
_FIXED = frozenset(_HANDLERS)
