"""The reference IPC wire format, byte by byte. This file is its specification.

Overview
========

A message is a tagged, positional msgspec struct (see :mod:`reference_codec.schema`)
encoded as MessagePack. It travels as one or more ZeroMQ frames::

    frame 0        the msgpack body of the message
    frame 1..n     (wire v2 only) raw out-of-band buffers, in the order the
                   body references them; each is referenced exactly once

Wire v1 is a single frame and is byte-compatible with SGLang 0.5.23 for every
message whose values use only ext codes 1-3 (see "Compatibility" below). Wire v2
is wire v1 plus out-of-band buffers: a v2 message whose buffers are all below
the threshold is byte-identical to its v1 form, and a v2 decoder reads v1.

Message body
============

A message is a msgpack array: ``[tag, field_1, ..., field_n]``. ``tag`` is a
msgpack str naming the class (``"BatchTokenIDOutput"``); fields follow in
declaration order, base-class fields (``rid``, ``http_worker_ipc`` or ``rids``,
``http_worker_ipcs``) first. Every field is written, defaults included. A
decoder fills missing trailing fields with their defaults and ignores extra
trailing elements; that is the only schema evolution positional encoding
allows, so fields are appended at the tail only.

Nested structs follow their own options: tagged ones (``PickleWrapper``,
the ``*ReqTimeStats`` types) are ``[tag, ...]``; ``array_like`` ones are
positional arrays; the rest (``KvHintsEnvelope``, ``BeamSearchSequence``,
``ParallelismInfo``, ...) are maps keyed by field name. Enums travel as their
value. A typed set (``stop_token_ids``) is an array in ascending order, a
canonical form so that a second hop re-encodes it byte for byte (SGLang writes
iteration order, which equals ascending order for small ints but not always).
Integers are msgpack ints (at most 64 bits); floats are float64 (never
float32, so no bits are lost); ``str`` is msgpack str (valid UTF-8 only) and
``bytes`` is msgpack bin.

Buffer extensions (codes 1, 2, 3: shared with SGLang 0.5.23)
=============================================================

``array.array``, ``torch.Tensor`` and ``numpy.ndarray`` travel as msgpack ext
values whose payload has the *buffer layout*::

    +----------------+------------------------+-------------------------+
    | u32 big-endian |  metadata (msgpack)    |  raw bytes              |
    | len(metadata)  |  len(metadata) bytes   |  the rest of the payload|
    +----------------+------------------------+-------------------------+

    code 1  array.array    metadata: typecode, a msgpack str ("q", "d", ...)
                           raw: the array's machine bytes (native byte order)
    code 2  torch.Tensor   metadata: [shape, dtype, device]
                             shape  array of ints (0-d: [], empty: [0, 3])
                             dtype  str, torch dtype without "torch."
                                    ("bfloat16", "float8_e4m3fn", "uint16")
                             device str, "cpu" or "cuda:N" (also "cuda",
                                    "mps", "xpu:N", "meta" is refused)
                           reference extension: a 4th element ``true`` when the
                           tensor requires grad (omitted otherwise, so the common
                           case stays SGLang-compatible)
                           raw: C-contiguous element bytes, little-endian as
                           the tensor is in memory; exactly
                           prod(shape) * itemsize bytes
    code 3  numpy.ndarray  metadata: [shape, dtype]
                             dtype  ``dtype.str`` ("<f4", ">i8", "|b1", "<U3")
                                    or, for structured dtypes (reference
                                    extension), ``dtype.descr`` as nested arrays
                           raw: C-contiguous bytes in the dtype's byte order;
                           exactly prod(shape) * itemsize bytes

Codes 4 (shared-memory multimodal handle) and 5 (CUDA IPC tensor proxy) are
SGLang's; they carry process-local handles that mean nothing to another
process, so the reference refuses them with a DecodeError.

Out-of-band buffer extensions (codes 33, 34, 35: wire v2)
=========================================================

With ``ReferenceCodec(out_of_band_threshold=N)`` a buffer of N bytes or more
leaves the body. Its ext code is ``32 + in-band code`` and its payload is::

    +----------------+------------------------+----------------+
    | u32 big-endian |  metadata (msgpack)    | u32 big-endian |
    | len(metadata)  |  as for the in-band    | frame index    |
    |                |  code                  | (1..n)         |
    +----------------+------------------------+----------------+

The raw bytes are the whole of frame ``index``. On encode the frame is a
``memoryview`` of the tensor, array or ndarray's own memory (no copy). On
decode the buffer is used in place when the frame is writable (``bytearray``,
a writable ``memoryview``, a ZeroMQ frame received with ``copy=False``) and
copied once otherwise, so a decoded tensor never aliases immutable ``bytes``.
A v1 decoder (SGLang 0.5.23) does not know these codes and cannot mistake them
for in-band buffers.

Reference value extensions (codes 64-68)
========================================

Where a schema field is untyped (``object``, ``Dict[str, Any]``), msgpack alone
would lose Python types that pickle keeps. The reference writes these values,
in untyped positions only, as::

    code 64  tuple           payload: msgpack array of the items (same rules)
    code 65  torch.Size      payload: msgpack array of ints
    code 66  numpy scalar    payload: buffer layout, metadata = ``dtype.str``,
                             raw = the scalar's ``itemsize`` bytes
    code 67  big integer     payload: signed two's-complement big-endian,
                             the minimal number of bytes, 1 to 16 (128 bits)
    code 68  enum member     payload: msgpack [enum class name, value]; only
                             the enums of the schema (``ENUM_TYPES``), or, for
                             a codec over another class set, the enums its
                             classes' fields declare

A map key in an untyped position decodes to a str, int, float, bool, None or
bytes; a decoder refuses any other key (an array, which msgpack decoders turn
into a tuple; a timestamp; a tuple or enum extension), since no encoder writes
one and a second hop could not re-encode it.

Code 67 is also how a field typed :class:`~reference_codec.schema.Int128`
(trace ids) travels, in any position. SGLang 0.5.23 decodes codes 64-68 as
opaque ``msgspec.msgpack.Ext`` values.

Ext codes a decoder does not know
=================================

The reference refuses a value whose ext code it does not define (anything
but 1-3, 33-35 and 64-68; 4 and 5 are SGLang's process-local handles and are
refused too) with a ``DecodeError`` naming the code. Reasons: an ext code is
a type, and a value of unknown type can be neither validated nor compared,
nor handed to engine code that expects Python values (it fails later, far
from the wire, as an ``AttributeError`` on an opaque ``Ext``); and a new code
is a change of the wire, which comes with a new wire version both peers
speak (as v2's codes 33-35 did), not a value older peers pass on blind.

SGLang 0.5.23 keeps an unknown ext code as an opaque ``msgspec.msgpack.Ext``
on purpose (forward compatibility, tested in its own suite). Both are
legitimate contracts, so the golden vector is ``i_unknown_ext_code``: an
implementation may refuse it with its decode error or decode it to a message
(with an opaque value), and must do nothing else. An unknown ext inside an
extra trailing field is never read by either (``i_extra_trailing_field_with_unknown_ext``).

Compatibility with SGLang 0.5.23
================================

Byte-identical in both directions for a message that holds no ``time_stats``
or ``customized_info`` (SGLang sends a pickled ``PickleWrapper`` there; the
reference sends concrete structs), no tensor with ``requires_grad``, no
structured numpy dtype, and no value that needs codes 64-68.

Copies per buffer
=================

What each tensor, ndarray or array costs in copies of its raw bytes (the
layout above is fixed; these are the reference's choices, tested in
``reference_codec/tests/test_buffer_copies.py``). A tensor that is not
contiguous, or not on the CPU, costs one more on encode (made contiguous,
moved to the host); ``map_location`` to a device costs one more on decode.

======================  ======================================================
encode, wire v1         1 for a buffer of 1 MiB or more: written once into the
                        frame (:mod:`reference_codec.splice`); 2 below that (the
                        ext payload, then msgspec's output), where copies are
                        cheaper than the splice
encode, wire v2         0 out of band (the frame views the value's memory);
                        in-band buffers as wire v1
decode, v1 or v2        0 when the frame is writable and the bytes sit at an
                        address aligned to the item size: the tensor or ndarray
                        views the frame; 1 otherwise (read-only ``bytes`` must
                        not be aliased by a mutable tensor, and PyTorch kernels
                        fault on misaligned storage: pytorch/pytorch#190043,
                        #191238), into a ``bytearray`` under 256 KiB and a
                        numpy allocation from there up
decode ``array.array``  always 1 (an array owns its memory)
======================  ======================================================

A wire v1 frame whose large buffers were spliced is a writable ``memoryview``
of a numpy ``uint8`` array rather than ``bytes``. Where a v1 buffer lands in
the frame depends on the bytes before it, which the wire fixes, so whether a
receiver decodes it in place depends on that offset and on where the receive
buffer starts; a v2 frame holds nothing but the buffer.

Decoding limits
===============

A decoder bounds what a frame may make it do (see
:class:`reference_codec.DecodeLimits`): total bytes of all frames, bytes of
one buffer, nesting depth of untyped values, and the number of elements a
buffer may declare. ``prod(shape) * itemsize`` must equal the raw length
before anything is allocated, dtype names are looked up in an allowlist (never
``getattr(torch, name)``), and device strings must match ``DEVICE_PATTERN``.
"""

from __future__ import annotations

import re
import struct
from typing import Any, Collection, Final

__all__ = [
    "EXT_ARRAY",
    "EXT_TORCH_TENSOR",
    "EXT_NDARRAY",
    "EXT_SGLANG_SHM_POINTER",
    "EXT_SGLANG_CUDA_IPC",
    "PROCESS_LOCAL_EXTS",
    "OUT_OF_BAND_OFFSET",
    "EXT_OOB_ARRAY",
    "EXT_OOB_TORCH_TENSOR",
    "EXT_OOB_NDARRAY",
    "EXT_TUPLE",
    "EXT_TORCH_SIZE",
    "EXT_NUMPY_SCALAR",
    "EXT_BIGINT",
    "EXT_ENUM",
    "EXT_NAMES",
    "U32",
    "DEVICE_PATTERN",
    "BIGINT_MAX_BYTES",
    "INT_MIN",
    "UINT_MAX",
    "PLAIN_TYPES",
    "all_plain",
    "canonical_set",
]

EXT_ARRAY: Final = 1
EXT_TORCH_TENSOR: Final = 2
EXT_NDARRAY: Final = 3
EXT_SGLANG_SHM_POINTER: Final = 4
EXT_SGLANG_CUDA_IPC: Final = 5
#: Ext codes whose payload names memory of the sending process (a shared-memory handle, a CUDA IPC proxy), in that order.
PROCESS_LOCAL_EXTS: Final = (EXT_SGLANG_SHM_POINTER, EXT_SGLANG_CUDA_IPC)

OUT_OF_BAND_OFFSET: Final = 32
EXT_OOB_ARRAY: Final = OUT_OF_BAND_OFFSET + EXT_ARRAY
EXT_OOB_TORCH_TENSOR: Final = OUT_OF_BAND_OFFSET + EXT_TORCH_TENSOR
EXT_OOB_NDARRAY: Final = OUT_OF_BAND_OFFSET + EXT_NDARRAY

EXT_TUPLE: Final = 64
EXT_TORCH_SIZE: Final = 65
EXT_NUMPY_SCALAR: Final = 66
EXT_BIGINT: Final = 67
EXT_ENUM: Final = 68

EXT_NAMES: Final = {
    EXT_ARRAY: "array.array",
    EXT_TORCH_TENSOR: "torch.Tensor",
    EXT_NDARRAY: "numpy.ndarray",
    EXT_SGLANG_SHM_POINTER: "SGLang shared-memory handle",
    EXT_SGLANG_CUDA_IPC: "SGLang CUDA IPC tensor proxy",
    EXT_OOB_ARRAY: "out-of-band array.array",
    EXT_OOB_TORCH_TENSOR: "out-of-band torch.Tensor",
    EXT_OOB_NDARRAY: "out-of-band numpy.ndarray",
    EXT_TUPLE: "tuple",
    EXT_TORCH_SIZE: "torch.Size",
    EXT_NUMPY_SCALAR: "numpy scalar",
    EXT_BIGINT: "big integer",
    EXT_ENUM: "enum member",
}

#: The length prefix of buffer metadata and the out-of-band frame index.
U32: Final = struct.Struct(">I")

#: Device strings a tensor may name on the wire.
DEVICE_PATTERN: Final = re.compile(r"\A(cpu|cuda|xpu|mps|npu|hpu)(:(0|[1-9][0-9]{0,3}))?\Z")

BIGINT_MAX_BYTES: Final = 16

#: msgpack's integers: int64's least to uint64's greatest. An int beyond them in
#: an untyped position travels as ``EXT_BIGINT``; in a typed one it is refused.
INT_MIN: Final = -(2**63)
UINT_MAX: Final = 2**64 - 1
#: The types whose values msgpack writes and reads back as the same Python value
#: in an untyped position, beside ``int`` within [INT_MIN, UINT_MAX]: a plain leaf.
PLAIN_TYPES: Final = frozenset({type(None), bool, str, bytes, float})


def all_plain(values: Collection[Any]) -> bool:
    """Whether every item of ``values`` (a list, tuple or dict view; iterated up to three times) is a plain leaf.

    A plain leaf is a value of :data:`PLAIN_TYPES` or an int within
    [:data:`INT_MIN`, :data:`UINT_MAX`]: the reference writes it as msgpack
    writes it and reads it back unchanged, so a walk over untyped values has
    nothing to do there. The types are gathered in C (``map(type, ...)``), so a
    run of leaves costs no Python call per item.
    """
    kinds = set(map(type, values))
    if kinds <= PLAIN_TYPES:
        return True
    if kinds == {int}:
        return INT_MIN <= min(values) and max(values) <= UINT_MAX
    if int in kinds and kinds <= PLAIN_TYPES | {int}:
        return all(INT_MIN <= v <= UINT_MAX for v in values if type(v) is int)
    return False


def canonical_set(value: object) -> object:
    """A typed set as the wire writes it: its items in ascending order (by type name, then value).

    Returns ``value`` itself when its iteration order is already that order (or
    it is not a set, or has fewer than two items), so a caller can tell by
    identity that nothing changed; else a sorted list.
    """
    t = type(value)
    if (t is not set and t is not frozenset and not isinstance(value, (set, frozenset))) or len(value) < 2:  # type: ignore[arg-type]
        return value  # zero or one item: one order only
    items = list(value)  # type: ignore[call-overload]
    first = type(items[0])
    if len(items) == 2:  # the commonest set sent (a request's stop ids: EOS and one more), without a sort
        second = items[1]
        if type(second) is first and (first is int or first is str):
            return value if items[0] < second else [second, items[0]]
    if first is int or first is str:  # every request's stop_token_ids: spelled out, not a lookup
        for item in items:
            if type(item) is not first:
                break
        else:  # all int or all str: their natural order is the wire's, without a key per item
            ordered = sorted(items)
            # msgspec writes a set in iteration order: when that is already ascending the set
            # itself is canonical, and keeping it spares rebuilding the structs around it
            return value if ordered == items else ordered
    try:
        return sorted(items, key=lambda v: (type(v).__name__, v))
    except TypeError:
        return sorted(items, key=lambda v: (type(v).__name__, repr(v)))
