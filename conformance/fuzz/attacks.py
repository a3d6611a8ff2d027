"""Structured attacks: hostile input placed where a decoder trusts the frame most.

Each attack takes a :class:`Seed` (a valid encoding and the msgpack spans of
its body) and :class:`~.choices.Choices`, and returns damaged frames:

``lie_count``        an array or map header claims another element count (up to 2**32-1)
``lie_length``       a str, bin or ext header claims another byte length
``ext_code``         an ext's type byte becomes another code (known, neighbouring, unknown, timestamp)
``buffer_metadata``  a tensor/ndarray/array ext gets hostile metadata: dtype and device strings,
                     huge or negative shapes with little data, wrong metadata types
``buffer_prefix``    the u32 metadata length, or a v2 out-of-band frame index, lies
``replace_value``    any value becomes a hostile one: deep nesting (arrays, maps, tuple exts),
                     huge-count headers with no elements, pickle payloads (bare, in an ext, as a
                     ``PickleWrapper``), invalid UTF-8, out-of-range ints, timestamps
``frame_structure``  out-of-band frames dropped, duplicated, swapped, emptied or added
``bytes``            blind byte damage (:mod:`.bytes_mutations`)

The ``PickleProbe`` payloads appear in ``replace_value`` and ``frame_structure``;
every attack's output must leave the probe file absent.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import msgspec

from reference_codec import wire

from .bytes_mutations import mutate_bytes
from .choices import Choices
from .msgpack_spans import Span, spans
from .pickle_probe import PickleProbe

__all__ = ["Seed", "ATTACKS", "attack", "hostile_values"]

Frames = List[bytes]
_enc = msgspec.msgpack.encode


@dataclass
class Seed:
    """A valid encoding to attack; ``spans`` are those of frame 0 (empty if it could not be read)."""

    frames: Frames
    label: str = ""
    spans: List[Span] = field(default_factory=list)

    @classmethod
    def of(cls, frames: Sequence, label: str = "") -> "Seed":
        frames = [bytes(memoryview(f)) for f in frames]
        try:
            found = spans(frames[0]) if frames else []
        except ValueError:
            found = []
        return cls(frames, label, found)


# --- msgpack building blocks ----------------------------------------------------


def _ext32(code: int, payload: bytes) -> bytes:
    return b"\xc9" + struct.pack(">Ib", len(payload), code) + payload


def _replace(buf: bytes, start: int, end: int, new: bytes) -> bytes:
    return buf[:start] + new + buf[end:]


def _deep_arrays(n: int) -> bytes:
    return b"\x91" * n + b"\xc0"


def _deep_maps(n: int) -> bytes:
    return b"\x81\xa1k" * n + b"\xc0"


def _deep_tuples(n: int) -> bytes:
    inner = b"\xc0"
    for _ in range(n):
        inner = _ext32(wire.EXT_TUPLE, b"\x91" + inner)
    return inner


def _big_uint(n: int) -> bytes:
    return b"\xcf" + struct.pack(">Q", n)


_HOSTILE_CACHE: Dict[str, List[bytes]] = {}


def hostile_values(probe: PickleProbe) -> List[bytes]:
    """Encoded values that a decoder must refuse or carry without harm, wherever they appear."""
    cached = _HOSTILE_CACHE.get(probe.path)
    if cached is None:
        cached = _HOSTILE_CACHE[probe.path] = _build_hostile_values(probe)
    return cached


def _build_hostile_values(probe: PickleProbe) -> List[bytes]:
    pickles = probe.payloads()
    shared_memory_ext, cuda_ipc_ext = wire.PROCESS_LOCAL_EXTS
    values = [
        _deep_arrays(70), _deep_arrays(5_000), _deep_arrays(200_000),
        _deep_maps(70), _deep_maps(20_000),
        _deep_tuples(70), _deep_tuples(600),
        b"\xdd\xff\xff\xff\xff",  # array of 2**32-1 elements, none present
        b"\xdf\xff\xff\xff\xff",  # map of 2**32-1 pairs, none present
        b"\xdb\xff\xff\xff\xff",  # str of 4 GiB, no bytes
        b"\xc6\x7f\xff\xff\xff",  # bin of 2 GiB, no bytes
        b"\xa3\xff\xfe\xfd",  # invalid UTF-8
        _big_uint(2**64 - 1), b"\xd3" + struct.pack(">q", -(2**63)),
        b"\xca\x7f\xc0\x00\x00",  # float32 NaN
        b"\xd6\xff\x00\x00\x00\x00",  # timestamp 32
        b"\xc7\x0c\xff" + b"\x00" * 12,  # timestamp 96
        b"\xd4\x00\x00",  # ext 0
        _ext32(wire.EXT_BIGINT, b"\x01" * 17),
        _ext32(wire.EXT_BIGINT, b""),
        _ext32(wire.EXT_ENUM, _enc(["Modality", 999])),
        _ext32(wire.EXT_ENUM, _enc(["os.system", "id"])),
        _ext32(wire.EXT_TORCH_SIZE, _enc([-1])),
        _ext32(wire.EXT_TORCH_SIZE, _enc(list(range(100)))),
        _ext32(shared_memory_ext, _enc({"name": "/dev/shm/x", "size": 2**40})),
        _ext32(cuda_ipc_ext, b"\x00" * 8),
        b"\xc0", b"\xc3", b"\x00", b"\xa0", b"\x90", b"\x80",
    ]
    for payload in pickles:
        values += [
            _enc(payload),  # bare bin
            _enc(["PickleWrapper", payload]),  # SGLang's opaque-field wrapper
            _ext32(wire.EXT_TUPLE, _enc([payload])),
            _ext32(42, payload),  # an unknown ext whose payload is a pickle
            _ext32(wire.EXT_NDARRAY, _meta_payload([[1], "|O"], payload)),  # object ndarray: numpy would unpickle
        ]
    return values


def _meta_payload(metadata: object, raw: bytes) -> bytes:
    meta = _enc(metadata)
    return wire.U32.pack(len(meta)) + meta + raw


# --- the attacks ------------------------------------------------------------------


def _pick(seed: Seed, c: Choices, accept: Callable[[Span], bool], label: str):
    candidates = [s for s in seed.spans if accept(s)]
    if not candidates:
        return None
    return c.choice(candidates, label)


def lie_count(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    span = _pick(seed, c, lambda s: s.kind in ("array", "map"), "container")
    if span is None:
        return mutate_bytes(seed.frames, c)
    lie = c.choice([0, span.size + 1, max(0, span.size - 1), 2**32 - 1, 2**31, 65_535, span.size * 1000], "claimed count")
    marker = b"\xdd" if span.kind == "array" else b"\xdf"
    body = _replace(seed.frames[0], span.start, span.body, marker + struct.pack(">I", lie))
    return [body] + seed.frames[1:]


def lie_length(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    span = _pick(seed, c, lambda s: s.kind in ("str", "bin", "ext"), "str/bin/ext")
    if span is None:
        return mutate_bytes(seed.frames, c)
    lie = c.choice([0, span.size + 1, max(0, span.size - 1), 2**32 - 1, len(seed.frames[0]), span.size * 2], "claimed length")
    body = seed.frames[0]
    if span.kind == "ext":
        new_header = b"\xc9" + struct.pack(">Ib", lie, span.ext_code)
    else:
        new_header = {"str": b"\xdb", "bin": b"\xc6"}[span.kind] + struct.pack(">I", lie)
    return [_replace(body, span.start, span.body, new_header)] + seed.frames[1:]


_EXT_CODES = (0, 1, 2, 3, 4, 5, 6, 32, 33, 34, 35, 36, 63, 64, 65, 66, 67, 68, 69, 127, -1, -128)


def ext_code(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    span = _pick(seed, c, lambda s: s.kind == "ext", "ext")
    if span is None:
        return replace_value(seed, c, probe)
    code = c.choice(_EXT_CODES, "new code")
    body = seed.frames[0]
    payload = body[span.body : span.end]
    return [_replace(body, span.start, span.end, _ext32(code, payload))] + seed.frames[1:]


_BUFFER_CODES = (wire.EXT_ARRAY, wire.EXT_TORCH_TENSOR, wire.EXT_NDARRAY, wire.EXT_OOB_ARRAY,
                 wire.EXT_OOB_TORCH_TENSOR, wire.EXT_OOB_NDARRAY, wire.EXT_NUMPY_SCALAR)

_HOSTILE_SHAPES: Tuple[Any, ...] = ([2**40], [2**32, 2**32, 16], [-1], [2**63], [2**64 - 1], [1.5], ["4"], [1] * 100,
                   [2**31, 2**31], [0, 2**62], None, 7, [], [0])
_HOSTILE_TORCH_DTYPES = ("float128", "object", "torch.float32", "__class__", "", "float32\x00", "Tensor",
                         "_C", "uint1", "float4_e2m1fn_x2", "qint8", 3, None)
_HOSTILE_NUMPY_DTYPES = ("|O", "O", "<U2147483647", "|V0", "|V2147483648", "<M8[ns]", "=f4", "f", "<f16",
                         [["a", "|O"]], [["a", "<f4", [2**31]]], [["", "<f4"]], "", 5, None)
_HOSTILE_DEVICES = ("cuda:1; rm -rf /", "meta", "cuda:99999", "", "cpu\x00", "CPU", "cuda:-1", "disk", 7, None,
                    "cuda:0" * 1000)
_HOSTILE_TYPECODES = ("O", "u", "w", "x", "", "qq", 5, None)


def buffer_metadata(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    span = _pick(seed, c, lambda s: s.kind == "ext" and s.ext_code in _BUFFER_CODES, "buffer")
    if span is None:
        return replace_value(seed, c, probe)
    body = seed.frames[0]
    payload = body[span.body : span.end]
    try:
        (meta_len,) = wire.U32.unpack_from(payload, 0)
        metadata = msgspec.msgpack.decode(payload[4 : 4 + meta_len])
    except Exception:
        return mutate_bytes(seed.frames, c)
    rest = payload[4 + meta_len :]
    code = span.ext_code % wire.OUT_OF_BAND_OFFSET if span.ext_code != wire.EXT_NUMPY_SCALAR else span.ext_code
    if code == wire.EXT_ARRAY or not isinstance(metadata, list):
        metadata = c.choice(_HOSTILE_TYPECODES + (["q"], {"typecode": "q"}), "metadata")
    else:
        metadata = list(metadata)
        which = c.choice(["shape", "dtype", "device", "extra", "truncate", "whole"], "metadata part")
        if which == "shape":
            metadata[0] = c.choice(_HOSTILE_SHAPES, "shape")
        elif which == "dtype" and len(metadata) > 1:
            pool = _HOSTILE_TORCH_DTYPES if code == wire.EXT_TORCH_TENSOR else _HOSTILE_NUMPY_DTYPES
            metadata[1] = c.choice(pool, "dtype")
        elif which == "device" and len(metadata) > 2:
            metadata[2] = c.choice(_HOSTILE_DEVICES, "device")
        elif which == "extra":
            metadata.append(c.choice([True, 1, "x", None, [1]], "extra metadata"))
        elif which == "truncate":
            metadata = metadata[: c.integer(0, max(0, len(metadata) - 1), "keep")]
        else:
            metadata = c.choice(["cpu", 1, None, {"shape": [1]}, [[1], [1], [1], [1], [1]]], "metadata")
    new_payload = _meta_payload(metadata, rest)
    return [_replace(body, span.start, span.end, _ext32(span.ext_code, new_payload))] + seed.frames[1:]


def buffer_prefix(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    span = _pick(seed, c, lambda s: s.kind == "ext" and s.ext_code in _BUFFER_CODES, "buffer")
    if span is None:
        return lie_length(seed, c, probe)
    body = seed.frames[0]
    payload = bytearray(body[span.body : span.end])
    if len(payload) < 4:
        return mutate_bytes(seed.frames, c)
    if span.ext_code in (wire.EXT_OOB_ARRAY, wire.EXT_OOB_TORCH_TENSOR, wire.EXT_OOB_NDARRAY) and c.boolean("frame index"):
        index = c.choice([0, 1, len(seed.frames), len(seed.frames) + 1, 2**32 - 1, 2**31], "index")
        payload[-4:] = wire.U32.pack(index)
    else:
        (meta_len,) = wire.U32.unpack_from(payload, 0)
        lie = c.choice([0, meta_len + 1, max(0, meta_len - 1), len(payload), 2**32 - 1], "metadata length")
        payload[:4] = wire.U32.pack(lie)
    return [_replace(body, span.start, span.end, _ext32(span.ext_code, bytes(payload)))] + seed.frames[1:]


def replace_value(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    body = seed.frames[0]
    # depth >= 1: the tag and the fields of the message and everything below them
    span = _pick(seed, c, lambda s: s.depth >= 1, "value")
    value = c.choice(hostile_values(probe), "hostile value")
    if span is None:
        return [value] + seed.frames[1:]
    return [_replace(body, span.start, span.end, value)] + seed.frames[1:]


def frame_structure(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    frames = list(seed.frames)
    how = c.choice(["drop", "duplicate", "swap", "empty", "add", "truncate", "pickle frame", "only body"], "frames")
    if how == "add" or len(frames) == 1:
        return frames + [c.choice([b"", b"\x00" * 64] + probe.payloads(), "extra frame")]
    i = c.integer(1, len(frames) - 1, "frame")
    if how == "drop":
        del frames[i]
    elif how == "duplicate":
        frames.insert(i, frames[i])
    elif how == "swap":
        j = c.integer(0, len(frames) - 1, "with")
        frames[i], frames[j] = frames[j], frames[i]
    elif how == "empty":
        frames[i] = b""
    elif how == "truncate":
        frames[i] = frames[i][: c.integer(0, max(0, len(frames[i]) - 1), "keep")]
    elif how == "pickle frame":
        frames[i] = c.choice(probe.payloads(), "payload")
    else:
        frames = frames[:1]
    return frames


def byte_damage(seed: Seed, c: Choices, probe: PickleProbe) -> Frames:
    return mutate_bytes(seed.frames, c)


ATTACKS: Dict[str, Callable[[Seed, Choices, PickleProbe], Frames]] = {
    "lie_count": lie_count,
    "lie_length": lie_length,
    "ext_code": ext_code,
    "buffer_metadata": buffer_metadata,
    "buffer_prefix": buffer_prefix,
    "replace_value": replace_value,
    "frame_structure": frame_structure,
    "bytes": byte_damage,
}


def attack(seed: Seed, c: Choices, probe: PickleProbe, name: Optional[str] = None) -> Frames:
    """Damaged frames from ``seed``: attack ``name``, or one chosen by ``c``; sometimes followed by byte damage."""
    name = name or c.choice(sorted(ATTACKS), "attack")
    frames = ATTACKS[name](seed, c, probe)
    if name != "bytes" and c.integer(0, 7, "then damage bytes") == 0:
        frames = mutate_bytes(frames, c)
    return frames
