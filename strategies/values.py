"""Leaf values: integers, floats, text, bytes, numpy scalars, ``array.array``, big integers.

These are the values every other strategy is built from, each biased toward
the cases a codec gets wrong: integers at every msgpack width transition and
at the int64/uint64/int128 limits, NaN (with payloads), infinities, ``-0.0``
and subnormals, text with combining characters, emoji and astral code points.

Everything here is encodable by the reference codec, except
:func:`unencodable_text`, which is opt-in by construction: lone surrogates are
valid Python ``str`` (pickle carries them) but not UTF-8 (msgpack cannot).
"""

from __future__ import annotations

import functools
import math
import struct
import sys
from array import array
from typing import Optional, Sequence, Tuple

import hypothesis.strategies as st
import numpy as np
from hypothesis.errors import InvalidArgument

from reference_codec.dtypes import ARRAY_TYPECODES
from reference_codec.schema import INT64_MAX, INT64_MIN, UINT64_MAX, Int128

from ._draws import choice, exact_binary, ints
from ._public import check_bool, check_int, check_subset, named, named_composite

__all__ = [
    "INT_EDGES",
    "SPECIAL_FLOATS",
    "SPECIAL_TEXTS",
    "NUMPY_SCALAR_DTYPES",
    "ARRAY_TYPECODES_GENERATED",
    "integers_between",
    "int64s",
    "uint64s",
    "int128s",
    "big_ints",
    "edge_floats",
    "nan_payloads",
    "texts",
    "unencodable_text",
    "numpy_scalars",
    "arrays",
]

#: Integers where msgpack changes width or sign form, and the 64/128-bit limits.
INT_EDGES: Tuple[int, ...] = tuple(
    sorted(
        {
            0, 1, -1,
            127, 128, 255, 256, 2**15 - 1, 2**15, 2**16 - 1, 2**16,
            2**31 - 1, 2**31, 2**32 - 1, 2**32,
            2**63 - 1, 2**63, 2**64 - 1, 2**64,
            -32, -33, -128, -129, -(2**15), -(2**15) - 1, -(2**31), -(2**31) - 1,
            INT64_MIN, INT64_MIN + 1, INT64_MIN - 1,
            Int128.MAX, Int128.MAX - 1, Int128.MIN, Int128.MIN + 1,
        }
    )
)

_F64 = struct.Struct("<d")
#: Floats whose bits a codec must keep: signed zero, infinities, NaN, the
#: subnormal and normal extremes, and values that do not survive float32.
SPECIAL_FLOATS: Tuple[float, ...] = (
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    -math.nan,
    5e-324,
    -5e-324,
    2.225073858507201e-308,  # largest subnormal
    2.2250738585072014e-308,  # smallest normal
    1.7976931348623157e308,
    -1.7976931348623157e308,
    0.1,
    1.0000000000000002,
    16777217.0,  # not representable in float32
    2.0**63,
    -(2.0**63),
)

#: Text that tends to break encoders: empty, NUL, combining sequences, ZWJ
#: emoji, astral code points, a BOM, right-to-left text, line separators.
SPECIAL_TEXTS: Tuple[str, ...] = (
    "",
    "\x00",
    "é",
    "e\u0301",
    "a\u0308\u0301\u0323",
    "🙂",
    "👩\u200d👩\u200d👧",
    "🇺🇳",
    "\U0010ffff",
    "\ufeff",
    "\u200b",
    "שלום",
    "漢字かな",
    "\u2028\u2029",
    "</s>",
    "<|im_end|>",
    "\n",
)

_INTERESTING_CHARS = st.sampled_from(
    ["\u0301", "\u0308", "\u200d", "🙂", "👩", "é", "ß", "漢", "\U0010ffff", "\ufeff", "\x00", "\n", "\u2028"]
)
_UTF8_CHARS = st.characters(codec="utf-8")
_TEXT = named(
    "texts",
    st.one_of(st.text(st.one_of(_UTF8_CHARS, _INTERESTING_CHARS), max_size=12), st.sampled_from(SPECIAL_TEXTS)),
)

#: numpy scalar dtypes generated in untyped positions (byte order is native:
#: numpy scalars always are).
NUMPY_SCALAR_DTYPES: Tuple[str, ...] = (
    "float32", "float64", "float16", "int64", "int32", "int16", "int8",
    "uint64", "uint32", "uint16", "uint8", "bool", "complex64", "complex128",
)

# 'u' is deprecated from Python 3.13 (DeprecationWarning on construction).
ARRAY_TYPECODES_GENERATED: Tuple[str, ...] = tuple(
    ["q"] + [c for c in ARRAY_TYPECODES if c != "q" and (c != "u" or sys.version_info < (3, 13))]
)


def integers_between(min_value: Optional[int] = None, max_value: Optional[int] = None) -> st.SearchStrategy[int]:
    """Integers in ``[min_value, max_value]``, half the time one of :data:`INT_EDGES` or a bound.

    A missing bound is the int64 limit on that side: a plain ``int`` with no
    constraint must still fit a msgpack integer.

    Shrinks toward 0 (or the bound nearest to it).
    """
    lo = INT64_MIN if min_value is None else check_int(min_value, "min_value")
    hi = INT64_MAX if max_value is None else check_int(max_value, "max_value")
    if lo > hi:
        raise InvalidArgument(f"min_value={lo} is greater than max_value={hi}")
    return _named_integers_between(lo, hi)


@functools.lru_cache(maxsize=None)
def _named_integers_between(lo: int, hi: int) -> st.SearchStrategy[int]:
    return named("integers_between", _integers_between(lo, hi), min_value=lo, max_value=hi)


@functools.lru_cache(maxsize=None)
def _integers_between(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = sorted({e for e in (*INT_EDGES, lo, hi, lo + 1, hi - 1) if lo <= e <= hi})
    return st.one_of(st.integers(lo, hi), st.sampled_from(edges))


_INT64S = named("int64s", _integers_between(INT64_MIN, INT64_MAX))
_UINT64S = named("uint64s", _integers_between(0, UINT64_MAX))


def int64s() -> st.SearchStrategy[int]:
    """Signed 64-bit integers, biased toward width transitions and the limits. Shrinks toward 0."""
    return _INT64S


def uint64s() -> st.SearchStrategy[int]:
    """Unsigned 64-bit integers (hashes, pointers), up to ``2**64 - 1``. Shrinks toward 0."""
    return _UINT64S


def _wide(lo: int, hi: int) -> st.SearchStrategy[int]:
    # Values that need more than 64 bits are the point; st.integers alone
    # rarely leaves the int64 range.
    beyond = st.one_of(
        st.integers(UINT64_MAX + 1, hi),
        st.integers(lo, INT64_MIN - 1),
    )
    return st.one_of(st.integers(lo, hi), beyond, st.sampled_from([e for e in INT_EDGES if lo <= e <= hi]))


_BIG_INTS = named("big_ints", _wide(Int128.MIN, Int128.MAX))
_INT128S = named("int128s", _wide(Int128.MIN, Int128.MAX).map(Int128))


def int128s() -> st.SearchStrategy[Int128]:
    """:class:`~reference_codec.schema.Int128` values over the full signed 128-bit range.

    A third of them need more than 64 bits (trace ids do). Shrinks toward ``Int128(0)``.
    """
    return _INT128S


def big_ints() -> st.SearchStrategy[int]:
    """Plain ``int`` over the signed 128-bit range, often beyond 64 bits (for untyped positions).

    Shrinks toward 0.
    """
    return _BIG_INTS


_BOOLS = st.booleans()
_MANTISSAS = st.integers(1, 2**52 - 1)


@named_composite("nan_payloads")
def _nan_payloads(draw) -> float:
    sign = draw(_BOOLS)
    mantissa = draw(_MANTISSAS)
    return _F64.unpack(struct.pack("<Q", (sign << 63) | (0x7FF << 52) | mantissa))[0]


_NAN_PAYLOADS = _nan_payloads()


def nan_payloads() -> st.SearchStrategy[float]:
    """NaNs with every sign, quiet/signalling bit and payload. Shrinks toward the NaN with payload 1."""
    return _NAN_PAYLOADS


_EDGE_FLOATS = named("edge_floats", st.one_of(st.floats(), st.sampled_from(SPECIAL_FLOATS), _NAN_PAYLOADS))


def edge_floats(*, allow_nan: bool = True, allow_infinity: bool = True) -> st.SearchStrategy[float]:
    """Python floats, often NaN (with payloads), infinite, ``-0.0``, subnormal or extreme.

    Shrinks toward 0.0.
    """
    check_bool(allow_nan, "allow_nan")
    check_bool(allow_infinity, "allow_infinity")
    if allow_nan and allow_infinity:
        return _EDGE_FLOATS
    specials = [x for x in SPECIAL_FLOATS if (allow_nan or not math.isnan(x)) and (allow_infinity or not math.isinf(x))]
    branches = [st.floats(allow_nan=allow_nan, allow_infinity=allow_infinity), st.sampled_from(specials)]
    if allow_nan:
        branches.append(_NAN_PAYLOADS)
    return named("edge_floats", st.one_of(branches), allow_nan=allow_nan, allow_infinity=allow_infinity)


def texts(*, min_size: int = 0, max_size: Optional[int] = None, pattern: Optional[str] = None) -> st.SearchStrategy[str]:
    """Valid Unicode text (no lone surrogates) rich in non-ASCII, combining marks and emoji.

    ``min_size``/``max_size`` count code points, as ``msgspec.Meta`` does;
    ``pattern`` (a regex the whole string must match) overrides the alphabet.
    Shrinks toward ``""`` (or the shortest text allowed).
    """
    check_int(min_size, "min_size", min_value=0)
    if max_size is not None:
        check_int(max_size, "max_size", min_value=min_size)
    if pattern is not None:
        if not isinstance(pattern, str):
            raise InvalidArgument(f"pattern must be a str, got {pattern!r}")
        base = st.from_regex(pattern, fullmatch=True, alphabet=_UTF8_CHARS)
        if min_size or max_size is not None:
            base = base.filter(lambda s: min_size <= len(s) <= (max_size if max_size is not None else len(s)))
        return base
    if min_size == 0 and max_size is None:
        return _TEXT
    return _sized_texts(min_size, max_size)


@functools.lru_cache(maxsize=None)
def _sized_texts(min_size: int, max_size: Optional[int]) -> st.SearchStrategy[str]:
    specials = [s for s in SPECIAL_TEXTS if min_size <= len(s) and (max_size is None or len(s) <= max_size)]
    generated = st.text(st.one_of(_UTF8_CHARS, _INTERESTING_CHARS), min_size=min_size, max_size=max_size)
    strategy = st.one_of(generated, st.sampled_from(specials)) if specials else generated
    return named("texts", strategy, min_size=min_size, max_size=max_size)


_AFFIX = st.text(_UTF8_CHARS, max_size=4)
_SURROGATES = st.characters(categories=["Cs"])


@named_composite("unencodable_text")
def _unencodable_text(draw) -> str:
    return draw(_AFFIX) + draw(_SURROGATES) + draw(_AFFIX)


_UNENCODABLE_TEXT = _unencodable_text()


def unencodable_text() -> st.SearchStrategy[str]:
    """Text holding at least one lone surrogate: valid ``str`` for pickle, not UTF-8 for msgpack.

    Opt-in only: no default strategy of this package produces it, because the
    default message strategies must be encodable by the reference codec.
    Shrinks toward ``"\\ud800"``.
    """
    return _UNENCODABLE_TEXT


@named_composite("numpy_scalars")
def _numpy_scalars(draw, dtypes: Tuple[str, ...] = NUMPY_SCALAR_DTYPES) -> np.generic:
    dtype = np.dtype(draw(choice(dtypes)))
    raw = draw(exact_binary(dtype.itemsize))
    if dtype == np.bool_:
        raw = bytes(b & 1 for b in raw)  # any other byte is not a valid numpy bool
    return np.frombuffer(raw, dtype=dtype)[0]


_NUMPY_SCALARS = _numpy_scalars()


def numpy_scalars(*, dtypes: Optional[Sequence[str]] = None) -> st.SearchStrategy[np.generic]:
    """numpy scalars (``np.float16(...)``, ``np.int64(...)``, ...) built from random bytes.

    Byte-level generation reaches NaN payloads, infinities and ``-0.0``
    naturally. Shrinks toward the first dtype (``float32``) with all-zero bytes.
    """
    if dtypes is None:
        return _NUMPY_SCALARS
    for d in dtypes if not isinstance(dtypes, str) else [dtypes]:
        try:
            np.dtype(d)
        except TypeError:
            raise InvalidArgument(f"dtypes has {d!r}, which is not a numpy dtype") from None
    return _numpy_scalars(dtypes=check_subset(dtypes, "dtypes", NUMPY_SCALAR_DTYPES))


@named_composite("arrays")
def _arrays(draw, typecodes: Tuple[str, ...] = ARRAY_TYPECODES_GENERATED, max_size: int = 8) -> array:
    code = draw(choice(typecodes))
    n = draw(ints(0, max_size))
    if code == "u":
        return array("u", "".join(draw(_UTF8_CHARS) for _ in range(n)))
    out = array(code)
    out.frombytes(draw(exact_binary(n * ARRAY_TYPECODES[code])))
    return out


def arrays(*, typecodes: Optional[Sequence[str]] = None, max_size: int = 8) -> st.SearchStrategy[array]:
    """``array.array`` of any typecode (``'q'`` first), elements from random bytes.

    Shrinks toward an empty ``array('q')``.
    """
    chosen: dict = {} if typecodes is None else {"typecodes": check_subset(typecodes, "typecodes", ARRAY_TYPECODES)}
    if check_int(max_size, "max_size", min_value=0) != 8:
        chosen["max_size"] = max_size
    return _cached_arrays(**chosen)


_cached_arrays = functools.lru_cache(maxsize=None)(_arrays)
