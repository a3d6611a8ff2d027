"""A language-neutral JSON form of reference values: exact, reversible, readable from any language.

The golden vectors (:mod:`conformance.vectors`) state the message a frame must
decode to in this form, so that an implementation in Rust, Go or C++ can check
itself against them without Python. ``to_neutral(value)`` gives a value made of
JSON types only (``dict``, ``list``, ``str``, ``int``, ``bool``, ``None``), and
``from_neutral(obj)`` rebuilds a value that :func:`conformance.equivalence.compare`
finds equivalent to the original: same types, same float bits, same dtypes,
shapes, devices and bytes.

The form
========

Four JSON types stand for themselves; everything else is a JSON object with
exactly one key, which starts with ``$`` and names the kind. (That is serde's
"externally tagged" enum layout, and a ``switch`` on the single key in Go.) A
JSON object is therefore never a plain map: a dict is ``{"$dict": ...}``.

==================  ==========================================================
value               neutral form
==================  ==========================================================
``None``            ``null``
``bool``            ``true`` / ``false``
``str``             a JSON string (valid Unicode; lone surrogates have no form)
``int``             a JSON integer when ``-(2**53 - 1) <= x <= 2**53 - 1``,
                    else ``{"$int": "-9223372036854775808"}`` (decimal text)
``float``           ``{"$f64": "7ff8000000000000"}``: the IEEE-754 binary64
                    bits as 16 lowercase hex digits, most significant first
``bytes``           ``{"$bytes": "00ff"}`` (lowercase hex, ``""`` when empty)
``list``            a JSON array of neutral items
``tuple``           ``{"$tuple": [items]}``
``torch.Size``      ``{"$size": [ints]}``
``set``             ``{"$set": [items]}``; ``frozenset``: ``{"$frozenset": [...]}``
``dict``            ``{"$dict": [[key, value], ...]}`` in insertion order; keys
                    are neutral values too (``1``, ``true``, ``"1"`` differ)
msgspec ``Struct``  ``{"$struct": {"type": "SamplingParams",
                    "fields": [["max_new_tokens", 128], ...]}}``: the class
                    name and *every* field, in declaration (wire) order
enum member         ``{"$enum": {"type": "Modality", "name": "IMAGE", "value": 1}}``
``Int128``          ``{"$int128": "-170141183460469231731687303715884105728"}``
torch.Tensor        ``{"$tensor": {"dtype": "bfloat16", "shape": [2, 3],
                    "device": "cpu", "requires_grad": false, "data": hex}}``
numpy.ndarray       ``{"$ndarray": {"dtype": "<f4", "shape": [2], "data": hex}}``
array.array         ``{"$array": {"typecode": "q", "data": hex}}``
numpy scalar        ``{"$np": {"dtype": "<f4", "data": hex}}``
msgpack ``Ext``     ``{"$ext": {"code": 64, "data": hex}}`` (an undecoded ext)
==================  ==========================================================

Details a non-Python reader needs:

* Every JSON number in the form is an integer. The range is that of an IEEE
  double's exact integers so that parsers that read numbers as doubles
  (JavaScript, Go's ``encoding/json`` into ``interface{}``) cannot round an
  int64 token id; larger ints are ``$int`` text. A reader must accept either
  form for any integer; a writer uses the number form exactly in that range.
* A float is only ever ``$f64``, so ``-0.0``, infinities and NaN payloads are
  exact, and ``1`` (int) and ``1.0`` (float) cannot be confused.
* ``data`` of a tensor is its elements as C-contiguous bytes in the tensor's
  own (little-endian) order, exactly ``prod(shape) * itemsize`` bytes, the
  ``raw`` of wire ext 2. ``dtype`` is the wire's torch dtype name (see
  :mod:`reference_codec.wire`). ``device`` is where the tensor is; the vectors
  only hold ``"cpu"``.
* An ndarray's ``dtype`` is its wire dtype: ``dtype.str`` (``"<f4"``,
  ``">i8"``, ``"|b1"``) or, for structured dtypes, ``dtype.descr`` as nested
  arrays (``[["a", "<i4"], ["", "|V4"], ["b", ">f8", [2]]]``, ``""`` names
  padding). ``data`` is C-contiguous bytes in that dtype's byte order.
* ``$array`` data is the ``array.array``'s machine bytes (little-endian on every
  platform the suite supports), as on the wire (ext 1).
* ``$np`` is a numpy scalar (``np.float32(1.5)``, not a Python float): its
  dtype as for ndarrays and its ``itemsize`` bytes. A scalar comes back as the
  canonical type of its dtype (``np.longlong`` becomes ``np.int64``, as on the
  wire and through pickle).
* ``$set`` items are sorted by their canonical JSON text (``json.dumps`` with
  sorted keys, no spaces, ASCII only), compared byte by byte, so the form of a
  set is deterministic: ``{"b", "a", 1}`` is ``{"$set": ["a", "b", 1]}``
  because ``"`` sorts before ``1``. A reader compares sets as sets.
* ``$struct`` ``type`` is the class name, which is also the wire tag of tagged
  structs. A struct's fields are all written, defaults included.

Usage::

    from conformance.neutral import to_neutral, from_neutral, dumps_canonical

    obj = to_neutral(msg)                  # JSON-able
    json.dumps(obj, allow_nan=False)       # always succeeds
    same = from_neutral(obj)               # compare(msg, same) is None

``to_neutral`` raises ``TypeError`` naming the path of a value with no form
(``datetime``, a tensor subclass, an object ndarray); ``from_neutral`` raises
``ValueError`` naming the path of anything malformed, including a struct whose
field list is not exactly its class's fields.
"""

from __future__ import annotations

import enum
import json
import struct
from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Type, TypeVar

import msgspec
import numpy as np
import torch

from reference_codec.dtypes import (
    ARRAY_TYPECODES,
    TORCH_DTYPES,
    numpy_dtype_to_wire,
    torch_dtype_name,
)
from reference_codec.errors import format_path
from reference_codec.schema import Int128

__all__ = ["to_neutral", "from_neutral", "dumps_canonical", "schema_types", "SAFE_INT_MAX"]

#: The largest magnitude written as a JSON number (every integer up to it is an exact double).
SAFE_INT_MAX = 2**53 - 1

_F64 = struct.Struct(">d")


def dumps_canonical(obj: Any) -> str:
    """The canonical JSON text of a neutral value: sorted keys, no spaces, ASCII, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


# --- to_neutral -----------------------------------------------------------------


def to_neutral(value: Any) -> Any:
    """The neutral JSON form of ``value`` (see the module docstring); ``TypeError`` if it has none."""
    return _to(value, ())


def _to(value: Any, path: Tuple) -> Any:
    t = type(value)
    if value is None or t is bool:
        return value
    if t is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise TypeError(f"str that is not valid Unicode (lone surrogate) has no neutral form at {format_path(path)}") from None
        return value
    if t is int:
        return value if -SAFE_INT_MAX <= value <= SAFE_INT_MAX else {"$int": str(value)}
    if t is float:
        return {"$f64": _F64.pack(value).hex()}
    if t is bytes:
        return {"$bytes": value.hex()}
    if t is list:
        return [_to(v, path + (i,)) for i, v in enumerate(value)]
    if t is tuple:
        return {"$tuple": [_to(v, path + (i,)) for i, v in enumerate(value)]}
    if t is torch.Size:
        return {"$size": [int(d) for d in value]}
    if t is set or t is frozenset:
        items = sorted((_to(v, path + (i,)) for i, v in enumerate(value)), key=dumps_canonical)
        return {"$set" if t is set else "$frozenset": items}
    if t is dict:
        return {"$dict": [[_to(k, path + (k,)), _to(v, path + (k,))] for k, v in value.items()]}
    if t is Int128:
        return {"$int128": str(int(value))}
    if isinstance(value, enum.Enum):
        return {"$enum": {"type": t.__name__, "name": value.name, "value": _to(value.value, path)}}
    if isinstance(value, msgspec.Struct):
        fields = [[name, _to(getattr(value, name), path + (name,))] for name in t.__struct_fields__]
        return {"$struct": {"type": t.__name__, "fields": fields}}
    if t is torch.Tensor:
        return {"$tensor": _tensor_to(value, path)}
    if t is np.ndarray:
        return {"$ndarray": _ndarray_to(value, path)}
    if t is array:
        return {"$array": {"typecode": value.typecode, "data": value.tobytes().hex()}}
    if isinstance(value, np.generic):
        dtype = _numpy_dtype_to(value.dtype, path)
        return {"$np": {"dtype": dtype, "data": np.asarray(value).reshape(1).view(np.uint8).tobytes().hex()}}
    if t is msgspec.msgpack.Ext:
        return {"$ext": {"code": value.code, "data": bytes(value.data).hex()}}
    raise TypeError(f"{t.__module__}.{t.__qualname__} has no neutral form (at {format_path(path)})")


def _tensor_to(tensor: torch.Tensor, path: Tuple) -> Dict[str, Any]:
    if tensor.layout != torch.strided:
        raise TypeError(f"{tensor.layout} tensor has no neutral form (at {format_path(path)})")
    try:
        dtype = torch_dtype_name(tensor.dtype)
    except TypeError as exc:
        raise TypeError(f"{exc} (at {format_path(path)})") from None
    if tensor.device.type == "meta":
        raise TypeError(f"a meta tensor has no data (at {format_path(path)})")
    host = tensor.detach().cpu().resolve_conj().resolve_neg()
    data = b""
    if host.numel():
        # A fresh 1-d copy: ``contiguous()`` keeps odd strides of size-1 dimensions,
        # which ``view(torch.uint8)`` refuses.
        flat = torch.empty(host.numel(), dtype=host.dtype)
        flat.copy_(host.reshape(-1))
        data = flat.view(torch.uint8).numpy().tobytes()
    return {
        "dtype": dtype,
        "shape": list(tensor.shape),
        "device": str(tensor.device),
        "requires_grad": bool(tensor.requires_grad),
        "data": data.hex(),
    }


def _numpy_dtype_to(dtype: np.dtype, path: Tuple) -> Any:
    try:
        return numpy_dtype_to_wire(dtype)
    except TypeError as exc:
        raise TypeError(f"{exc} (at {format_path(path)})") from None


def _ndarray_to(values: np.ndarray, path: Tuple) -> Dict[str, Any]:
    dtype = _numpy_dtype_to(values.dtype, path)
    data = values.tobytes(order="C")  # C order whatever the memory layout
    return {"dtype": dtype, "shape": list(values.shape), "data": data.hex()}


# --- from_neutral ---------------------------------------------------------------

_SCHEMA_TYPES: Optional[Mapping[str, type]] = None


def schema_types() -> Mapping[str, type]:
    """Struct and enum classes of the reference schema by class name (what ``$struct``/``$enum`` name)."""
    global _SCHEMA_TYPES
    if _SCHEMA_TYPES is None:
        from reference_codec import schema

        classes: List[type] = list(schema.MESSAGE_TYPES.values()) + list(schema.NESTED_TYPES) + list(schema.ENUM_TYPES)
        for name in schema.__all__:
            obj = getattr(schema, name, None)
            if isinstance(obj, type) and issubclass(obj, (msgspec.Struct, enum.Enum)):
                classes.append(obj)
        _SCHEMA_TYPES = _by_name(classes)
    return _SCHEMA_TYPES


def _by_name(classes: Iterable[type]) -> Dict[str, type]:
    table: Dict[str, type] = {}
    for cls in classes:
        other = table.setdefault(cls.__name__, cls)
        if other is not cls:
            raise ValueError(f"two classes named {cls.__name__!r}: {other.__module__} and {cls.__module__}")
    return table


def from_neutral(obj: Any, *, types: Iterable[type] = ()) -> Any:
    """Rebuild the value whose neutral form is ``obj``; ``ValueError`` naming the path if malformed.

    ``$struct`` and ``$enum`` names are looked up among the reference schema's
    classes and ``types`` (extra struct or enum classes, for another schema).
    Tensors are rebuilt on the device they name, which must exist here.
    """
    table = schema_types()
    extra = tuple(types)
    if extra:
        table = {**table, **_by_name(extra)}
    return _From(table).build(obj, ())


#: The base class :meth:`_From._class` looks a name up under (a Struct or an Enum).
_C = TypeVar("_C")


class _From:
    def __init__(self, types: Mapping[str, type]):
        self.types = types

    def fail(self, path: Tuple, reason: str) -> ValueError:
        return ValueError(f"{reason} (at {format_path(path)})")

    def build(self, obj: Any, path: Tuple) -> Any:
        t = type(obj)
        if obj is None or t is bool or t is str:
            return obj
        if t is int:
            return obj
        if t is float:
            raise self.fail(path, f"JSON number {obj!r} is not an integer; floats are written {{\"$f64\": hex}}")
        if t is list:
            return [self.build(v, path + (i,)) for i, v in enumerate(obj)]
        if t is not dict:
            raise self.fail(path, f"{t.__name__} is not a JSON value")
        if len(obj) != 1:
            raise self.fail(path, f"a JSON object must have exactly one $-key, got keys {sorted(obj)!r:.80}")
        (key, body), = obj.items()
        handler = _KINDS.get(key)
        if handler is None:
            raise self.fail(path, f"unknown neutral kind {key!r:.40} (known: {', '.join(_KINDS)})")
        return handler(self, body, path)

    # each handler gets the body of {"$kind": body}

    def _text(self, body: Any, path: Tuple, what: str) -> str:
        if type(body) is not str:
            raise self.fail(path, f"{what} must be a JSON string, got {type(body).__name__}")
        return body

    def _hex(self, body: Any, path: Tuple, what: str = "data") -> bytes:
        text = self._text(body, path, what)
        try:
            if text != text.lower():
                raise ValueError
            return bytes.fromhex(text)
        except ValueError:
            raise self.fail(path, f"{what} is not lowercase hex: {text!r:.40}") from None

    def _items(self, body: Any, path: Tuple, kind: str) -> List[Any]:
        if type(body) is not list:
            raise self.fail(path, f"{kind} must hold a JSON array, got {type(body).__name__}")
        return [self.build(v, path + (i,)) for i, v in enumerate(body)]

    def _record(self, body: Any, path: Tuple, kind: str, keys: Tuple[str, ...]) -> Dict[str, Any]:
        if type(body) is not dict or set(body) != set(keys):
            got = sorted(body) if type(body) is dict else type(body).__name__
            raise self.fail(path, f"{kind} must be an object with keys {list(keys)}, got {got}")
        return body

    def _int(self, body: Any, path: Tuple) -> int:
        text = self._text(body, path, "$int")
        if not text.lstrip("-").isdigit() or not text.isascii():
            raise self.fail(path, f"$int is not decimal text: {text!r:.40}")
        return int(text)

    def _int128(self, body: Any, path: Tuple) -> Int128:
        try:
            return Int128(self._int(body, path))
        except ValueError as exc:
            raise self.fail(path, str(exc)) from None

    def _f64(self, body: Any, path: Tuple) -> float:
        raw = self._hex(body, path, "$f64")
        if len(raw) != 8:
            raise self.fail(path, f"$f64 must be 16 hex digits, got {len(raw) * 2}")
        return _F64.unpack(raw)[0]

    def _bytes(self, body: Any, path: Tuple) -> bytes:
        return self._hex(body, path, "$bytes")

    def _tuple(self, body: Any, path: Tuple) -> tuple:
        return tuple(self._items(body, path, "$tuple"))

    def _size(self, body: Any, path: Tuple) -> torch.Size:
        if type(body) is not list or not all(type(d) is int and d >= 0 for d in body):
            raise self.fail(path, "$size must be an array of non-negative integers")
        return torch.Size(body)

    def _set(self, body: Any, path: Tuple) -> set:
        return set(self._items(body, path, "$set"))

    def _frozenset(self, body: Any, path: Tuple) -> frozenset:
        return frozenset(self._items(body, path, "$frozenset"))

    def _dict(self, body: Any, path: Tuple) -> dict:
        if type(body) is not list:
            raise self.fail(path, "$dict must hold an array of [key, value] pairs")
        out: dict = {}
        for i, pair in enumerate(body):
            if type(pair) is not list or len(pair) != 2:
                raise self.fail(path + (i,), "$dict entry is not a [key, value] pair")
            key = self.build(pair[0], path + (i,))
            if key in out:
                raise self.fail(path + (key,), f"duplicate $dict key {key!r:.40}")
            out[key] = self.build(pair[1], path + (key,))
        return out

    def _class(self, name: Any, path: Tuple, base: Type[_C]) -> Type[_C]:
        cls = self.types.get(name) if type(name) is str else None
        if cls is None or not issubclass(cls, base):
            kind = "struct" if base is msgspec.Struct else "enum"
            raise self.fail(path, f"unknown {kind} type {name!r:.60}")
        return cls

    def _struct(self, body: Any, path: Tuple) -> msgspec.Struct:
        body = self._record(body, path, "$struct", ("type", "fields"))
        cls = self._class(body["type"], path, msgspec.Struct)
        pairs = body["fields"]
        if type(pairs) is not list or not all(type(p) is list and len(p) == 2 and type(p[0]) is str for p in pairs):
            raise self.fail(path, "$struct fields must be an array of [name, value] pairs")
        names = [p[0] for p in pairs]
        if tuple(names) != cls.__struct_fields__:
            raise self.fail(path, f"{cls.__name__} fields must be exactly {list(cls.__struct_fields__)} in order, got {names}")
        kwargs = {name: self.build(value, path + (name,)) for name, value in pairs}
        return cls(**kwargs)

    def _enum(self, body: Any, path: Tuple) -> enum.Enum:
        body = self._record(body, path, "$enum", ("type", "name", "value"))
        cls = self._class(body["type"], path, enum.Enum)
        member = cls.__members__.get(body["name"]) if type(body["name"]) is str else None
        if member is None:
            raise self.fail(path, f"{cls.__name__} has no member {body['name']!r:.40}")
        value = self.build(body["value"], path)
        if type(value) is not type(member.value) or value != member.value:
            raise self.fail(path, f"{cls.__name__}.{member.name} has value {member.value!r}, not {value!r:.40}")
        return member

    def _shape(self, shape: Any, path: Tuple) -> List[int]:
        if type(shape) is not list or len(shape) > 64 or not all(type(d) is int and d >= 0 for d in shape):
            raise self.fail(path, "shape must be an array of at most 64 non-negative integers")
        return shape

    def _check_length(self, raw: bytes, shape: List[int], itemsize: int, path: Tuple) -> int:
        count = 1
        for d in shape:
            count *= d
        if count * itemsize != len(raw):
            raise self.fail(path, f"shape {shape} x itemsize {itemsize} needs {count * itemsize} bytes, data has {len(raw)}")
        return count

    def _tensor(self, body: Any, path: Tuple) -> torch.Tensor:
        body = self._record(body, path, "$tensor", ("dtype", "shape", "device", "requires_grad", "data"))
        dtype = TORCH_DTYPES.get(body["dtype"]) if type(body["dtype"]) is str else None
        if dtype is None:
            raise self.fail(path, f"unknown torch dtype {body['dtype']!r:.40}")
        shape = self._shape(body["shape"], path)
        raw = self._hex(body["data"], path)
        count = self._check_length(raw, shape, dtype.itemsize, path)
        if type(body["requires_grad"]) is not bool:
            raise self.fail(path, "requires_grad must be true or false")
        device_text = self._text(body["device"], path, "device")
        try:
            device = torch.device(device_text)
        except RuntimeError:
            raise self.fail(path, f"invalid device {device_text!r:.40}") from None
        if count:
            tensor = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
        else:
            tensor = torch.empty(shape, dtype=dtype)
        if device.type != "cpu":
            try:
                tensor = tensor.to(device)
            except (RuntimeError, AssertionError) as exc:
                raise self.fail(path, f"cannot place a tensor on {device_text!r} here: {exc}") from None
        if body["requires_grad"]:
            tensor.requires_grad_(True)
        return tensor

    def _numpy_dtype(self, wire: Any, path: Tuple) -> np.dtype:
        try:
            if isinstance(wire, list):
                # descr_to_dtype, not np.dtype(descr): it turns "" fields back into padding.
                dtype = np.lib.format.descr_to_dtype(_descr(wire))
            elif isinstance(wire, str) and len(wire) >= 2 and wire[0] in "<>|":
                dtype = np.dtype(wire)
            else:
                raise ValueError("not a dtype.str or a descr array")
        except (TypeError, ValueError) as exc:
            raise self.fail(path, f"bad numpy dtype {wire!r:.80}: {exc}") from None
        if dtype.hasobject or dtype.itemsize == 0:
            raise self.fail(path, f"numpy dtype {dtype} cannot be rebuilt from bytes")
        return dtype

    def _ndarray(self, body: Any, path: Tuple) -> np.ndarray:
        body = self._record(body, path, "$ndarray", ("dtype", "shape", "data"))
        dtype = self._numpy_dtype(body["dtype"], path)
        shape = self._shape(body["shape"], path)
        raw = self._hex(body["data"], path)
        count = self._check_length(raw, shape, dtype.itemsize, path)
        if not count:
            return np.empty(shape, dtype=dtype)
        return np.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)

    def _array(self, body: Any, path: Tuple) -> array:
        body = self._record(body, path, "$array", ("typecode", "data"))
        typecode = body["typecode"]
        if type(typecode) is not str or typecode not in ARRAY_TYPECODES:
            raise self.fail(path, f"unknown array typecode {typecode!r:.20}")
        raw = self._hex(body["data"], path)
        if len(raw) % ARRAY_TYPECODES[typecode]:
            raise self.fail(path, f"array('{typecode}') data of {len(raw)} bytes is not a whole number of items")
        out = array(typecode)
        out.frombytes(raw)
        return out

    def _np(self, body: Any, path: Tuple) -> np.generic:
        body = self._record(body, path, "$np", ("dtype", "data"))
        dtype = self._numpy_dtype(body["dtype"], path)
        raw = self._hex(body["data"], path)
        if len(raw) != dtype.itemsize:
            raise self.fail(path, f"numpy scalar of dtype {dtype} needs {dtype.itemsize} bytes, data has {len(raw)}")
        return np.frombuffer(raw, dtype=dtype)[0]

    def _ext(self, body: Any, path: Tuple) -> msgspec.msgpack.Ext:
        body = self._record(body, path, "$ext", ("code", "data"))
        code = body["code"]
        if type(code) is not int or not -128 <= code <= 127:
            raise self.fail(path, f"ext code must be an integer in [-128, 127], got {code!r:.20}")
        return msgspec.msgpack.Ext(code, self._hex(body["data"], path))


def _descr(items: Any) -> list:
    """The neutral (JSON) form of ``dtype.descr`` back to numpy's: tuples, nested descrs, shape tuples."""
    if not isinstance(items, list) or not items:
        raise ValueError("a structured dtype is a non-empty array of [name, type(, shape)]")
    out: List[Tuple[Any, ...]] = []
    for item in items:
        if not isinstance(item, list) or len(item) not in (2, 3) or not isinstance(item[0], str):
            raise ValueError(f"malformed structured dtype field {item!r:.60}")
        t = _descr(item[1]) if isinstance(item[1], list) else item[1]
        if not isinstance(t, (str, list)):
            raise ValueError(f"malformed structured dtype field {item!r:.60}")
        if len(item) == 3:
            if not isinstance(item[2], list) or not all(type(d) is int and d >= 0 for d in item[2]):
                raise ValueError(f"malformed subarray shape {item[2]!r:.40}")
            out.append((item[0], t, tuple(item[2])))
        else:
            out.append((item[0], t))
    return out


#: ``$kind`` -> the method of :class:`_From` that rebuilds it.
_KINDS = {
    "$int": _From._int,
    "$int128": _From._int128,
    "$f64": _From._f64,
    "$bytes": _From._bytes,
    "$tuple": _From._tuple,
    "$size": _From._size,
    "$set": _From._set,
    "$frozenset": _From._frozenset,
    "$dict": _From._dict,
    "$struct": _From._struct,
    "$enum": _From._enum,
    "$tensor": _From._tensor,
    "$ndarray": _From._ndarray,
    "$array": _From._array,
    "$np": _From._np,
    "$ext": _From._ext,
}
