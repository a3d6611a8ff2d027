"""The reference msgpack codec for IPC messages (wire v1 and v2, see :mod:`.wire`)."""

from __future__ import annotations

import datetime
import enum
import gc
import pickle
import threading
from array import array
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

import msgspec
import numpy as np
import torch

from . import buffers, wire
from .devices import MapLocation
from .dtypes import ARRAY_TYPECODES, torch_dtype_name
from .errors import DecodeError, EncodeError, format_path
from .limits import DecodeLimits
from .paths import generic_body, locate, named_path, parse_msgspec_path
from .schema import ENUM_TYPES, MESSAGE_TYPES, Int128, PickleWrapper
from .schema_plan import Walker, walker_for
from .splice import SPLICE_MIN_BYTES, BufferSplicer
from .type_tree import reachable_enums

__all__ = ["ReferenceCodec", "Frame", "Frames"]

#: One frame: what zmq sends (a spliced wire v1 body is not bytes).
Frame = Union[bytes, bytearray, memoryview]
#: What ``encode`` returns and ``decode`` accepts: the body, then any out-of-band buffers.
Frames = List[Frame]

# The map keys an untyped value may have, on both sides of the wire (see wire.py).
_UNTYPED_KEY_TYPES = frozenset({str, int, bytes, bool, float, type(None)})
_ENUMS_BY_NAME: Mapping[str, type] = {cls.__name__: cls for cls in ENUM_TYPES}


def _unique_by_name(classes: Sequence[type]) -> Mapping[str, type]:
    """``name -> class`` for the classes whose name no other of them has (ext 68 names an enum by its class name alone)."""
    names = [cls.__name__ for cls in classes]
    return {cls.__name__: cls for cls in classes if names.count(cls.__name__) == 1}

_TYPED_BUFFERS = (torch.Tensor, np.ndarray, array)
_IN_BAND_CODES = frozenset({wire.EXT_TORCH_TENSOR, wire.EXT_NDARRAY, wire.EXT_ARRAY})
_OUT_OF_BAND_CODES = frozenset({wire.EXT_OOB_TORCH_TENSOR, wire.EXT_OOB_NDARRAY, wire.EXT_OOB_ARRAY})
# the layout head of each array typecode, written once (metadata is the typecode alone)
_ARRAY_HEADS: Mapping[str, bytes] = {
    tc: wire.U32.pack(len(msgspec.msgpack.encode(tc))) + msgspec.msgpack.encode(tc) for tc in ARRAY_TYPECODES
}
# and the other way round, for decode: every head has the same length (a one-character typecode)
_ARRAY_TYPECODE_BY_HEAD: Mapping[bytes, str] = {head: tc for tc, head in _ARRAY_HEADS.items()}
(_ARRAY_HEAD_SIZE,) = {len(head) for head in _ARRAY_HEADS.values()}
#: Default of ``ReferenceCodec(pause_gc_bytes=...)``: bodies this large decode with the collector paused.
PAUSE_GC_BYTES = 64 * 1024
_NEVER = 1 << 62
#: Distinct buffer metadata a codec keeps validated (see ``ReferenceCodec._buffer_layout``).
_LAYOUT_CACHE_SIZE = 1024


class _ExtFailure(Exception):
    """Raised inside ext_hook; carries the ext so the failure can be located afterwards."""

    def __init__(self, code: int, data: bytes, reason: str):
        super().__init__(reason)
        self.code, self.data, self.reason = code, data, reason


#: What msgspec's decode of a body may raise, each turned into a located DecodeError by ``_decode_failure``.
_DECODE_FAILURES = (_ExtFailure, msgspec.DecodeError, RecursionError)


class _CallState(threading.local):
    """Per-thread state of the call in progress, read by the msgspec hooks (which take no context).

    Class attributes are each thread's starting values, so a call sets only what it uses:
    ``views``/``used`` (decode: the frames, and which out-of-band frames the body referenced),
    ``depth`` (decode: tuple ext nesting; always back to 0 when a call ends), ``frames``
    (wire v2 encode: the buffers collected so far), ``splicer`` (wire v1 encode: the large
    buffers held back from msgspec, created by the hook on the first one), ``failed``
    (encode: the value the hook refused).
    """

    views: Optional[Sequence[Any]] = None
    used: Optional[List[bool]] = None
    depth: int = 0
    frames: Optional[List[Any]] = None
    splicer: Optional[BufferSplicer] = None
    failed: Any = None


class ReferenceCodec:
    """Encode IPC messages to frames and decode frames back, exactly and safely.

    Parameters
    ----------
    out_of_band_threshold
        ``None`` (default) writes wire v1: one frame, byte-compatible with
        SGLang 0.5.23. An int ``N`` writes wire v2: every tensor, ndarray or
        array of ``N`` bytes or more is its own frame, a view of the value's
        memory (no copy on encode; none on decode when the frame is writable).
    allow_pickle
        Accept SGLang's ``PickleWrapper`` in the declared opaque fields
        (``time_stats``, ``customized_info``) and unpickle it. Off by default:
        unpickling runs code chosen by whoever can reach the socket.
    limits
        :class:`DecodeLimits` for every decoded message.
    map_location
        Where decoded tensors go (``None``: the device they were sent from).
        A tensor from a device this process lacks raises ``DecodeError``.

    message_types
        The message classes frames decode to and ``encode`` accepts (default:
        the reference schema's, :data:`MESSAGE_TYPES`). Another set of
        tagged ``array_like`` structs with the same wire, such as SGLang's own
        classes, is read and written directly: the same bytes, no conversion,
        the codec's checks and buffer layouts applied to those classes' types.
        A ``PickleWrapper`` of another class set is a plain struct here: it
        travels as is and is never unpickled by the codec. An enum member in
        an untyped position (ext 68) is one of the enums those classes'
        fields declare (the schema's ``ENUM_TYPES`` by default), named by its
        class name; an enum whose name two of them share is refused.

    pause_gc_bytes
        Decode a body of this many bytes or more with Python's cyclic garbage
        collector paused (default 64 KiB; ``None``: never). A large batch
        decodes to tens of thousands of lists, which would trigger collections
        that traverse the whole heap while none of them can be garbage: 10-30%
        of the decode. The collector is re-enabled when the call ends, and
        left alone when it was already off. Collections are process-wide, so a
        thread that disables it for itself during such a decode has it
        re-enabled by the decode; pass ``None`` where that matters.

    ``encode(msg)`` raises :class:`EncodeError` (a ``TypeError``) naming the
    path of a value the schema cannot carry; ``decode(frames)`` raises
    :class:`DecodeError` (a ``msgspec.DecodeError``) naming the path and reason
    of anything malformed, and nothing else.
    """

    name = "reference"
    #: Declared capabilities, read by the conformance suite.
    wire_compatible = True
    decode_error = DecodeError

    def __init__(
        self,
        *,
        out_of_band_threshold: Optional[int] = None,
        allow_pickle: bool = False,
        limits: DecodeLimits = DecodeLimits(),
        map_location: MapLocation = None,
        pause_gc_bytes: Optional[int] = PAUSE_GC_BYTES,
        message_types: Optional[Sequence[type]] = None,
    ):
        if out_of_band_threshold is not None and (
            not isinstance(out_of_band_threshold, int) or isinstance(out_of_band_threshold, bool) or out_of_band_threshold < 0
        ):
            raise ValueError(f"out_of_band_threshold must be None or an int >= 0, got {out_of_band_threshold!r}")
        if not isinstance(allow_pickle, bool):
            raise TypeError(f"allow_pickle must be a bool, got {allow_pickle!r}")
        if pause_gc_bytes is not None and (not isinstance(pause_gc_bytes, int) or isinstance(pause_gc_bytes, bool) or pause_gc_bytes < 0):
            raise ValueError(f"pause_gc_bytes must be None or an int >= 0, got {pause_gc_bytes!r}")
        if not isinstance(limits, DecodeLimits):
            raise TypeError(f"limits must be a DecodeLimits, got {type(limits).__name__}")
        types = tuple(MESSAGE_TYPES.values()) if message_types is None else tuple(message_types)
        if not types or not all(isinstance(t, type) and issubclass(t, msgspec.Struct) for t in types):
            raise TypeError(f"message_types must be a non-empty sequence of msgspec.Struct classes, got {message_types!r}")
        self._own_schema = message_types is None
        # the enums an untyped position may carry (ext 68), by name: the schema's, or those the classes declare
        self._enums_by_name = _ENUMS_BY_NAME if message_types is None else _unique_by_name(reachable_enums(types))
        self.out_of_band_threshold = out_of_band_threshold
        self.out_of_band = out_of_band_threshold is not None
        self.allow_pickle = allow_pickle
        self.limits = limits
        self.map_location = map_location
        self.pause_gc_bytes = pause_gc_bytes
        self._pause_gc_at = _NEVER if pause_gc_bytes is None else pause_gc_bytes
        # a bytes body shorter than this needs neither the size check nor the pause (decode's short path)
        self._short_below = min(self._pause_gc_at, limits.max_message_bytes + 1)
        # per message class, the walk of its untyped, opaque and (encode) typed-set positions; None: nothing to visit
        self._encode_walkers = {cls: walker_for(cls, sets=True) for cls in types}
        self._decode_walkers = {cls: walker_for(cls, sets=False) for cls in types}
        # (ext code, metadata bytes) -> validated layout; off when map_location is a callable,
        # whose answer may change from call to call
        self._layouts: Optional[Dict[Tuple[int, bytes], Any]] = None if callable(map_location) else {}
        self._state = _CallState()
        # [True] once the hook has held a buffer back for splicing in any thread; never reset. The
        # thread-local splicer is read after an encode only then: a thread-local attribute costs
        # microseconds when the caches are cold, as they are between two messages in a server,
        # and most processes never splice. A thread that holds one back sets this first itself.
        self._splicing_seen = [False]
        self._encoder = msgspec.msgpack.Encoder(enc_hook=self._to_wire)
        self._unspliced_encoder = msgspec.msgpack.Encoder(enc_hook=self._unspliced_to_wire)
        # (shape, dtype) -> layout head of a plain CPU tensor (see buffers.plain_tensor_bytes)
        self._tensor_heads: Dict[Tuple[Any, Any], bytes] = {}
        self._decoder = msgspec.msgpack.Decoder(
            Union[types], dec_hook=self._dec_hook, ext_hook=self._ext_hook
        )
        self._untyped_decoder = msgspec.msgpack.Decoder(ext_hook=self._ext_hook)
        self._root_type = Union[types]

    def __repr__(self) -> str:
        parts = []
        if self.out_of_band:
            parts.append(f"out_of_band_threshold={self.out_of_band_threshold}")
        if self.allow_pickle:
            parts.append("allow_pickle=True")
        return f"ReferenceCodec({', '.join(parts)})"

    # --- encode -------------------------------------------------------------

    def encode(self, msg: msgspec.Struct) -> Frames:
        """Frames for ``msg``: ``[body]`` in wire v1, ``[body, *buffers]`` in wire v2."""
        try:
            walk = self._encode_walkers[type(msg)]
        except KeyError:
            raise EncodeError(
                f"{type(msg).__qualname__} is not a message of "
                + ("the reference schema (see MESSAGE_TYPES)" if self._own_schema else "this codec's message_types")
            ) from None
        if self.out_of_band:
            return self._encode_out_of_band(msg, walk, self._state)
        return [self._encode_v1(msg, walk)]

    def _encode_v1(self, msg: msgspec.Struct, walk: Optional[Walker]) -> Frame:
        """The wire v1 body of ``msg``, whose class's encode walk is ``walk``."""
        state = self._state
        try:
            wire_msg = msg if walk is None else walk(msg, self._encode_untyped, ())
            body = self._encoder.encode(wire_msg)
        except BaseException as exc:
            state.splicer = None  # the hook may have held buffers back before the failure
            located = self._located_encode_failure(msg, exc)
            if located is None:
                raise
            raise located from exc
        if not self._splicing_seen[0] or state.splicer is None:  # set by the hook when it held a large buffer back
            return body
        return self._spliced(body, wire_msg)

    def _spliced(self, body: bytes, wire_msg: object) -> Frame:
        """The body with the buffers the hook held back put in place of their placeholders."""
        state = self._state
        splicer, state.splicer = state.splicer, None
        spliced = splicer.assemble(body) if splicer is not None else None
        if spliced is not None:
            return spliced
        return self._unspliced_encoder.encode(wire_msg)  # a placeholder went missing from the body

    def frame_functions(self) -> Tuple[Callable[[msgspec.Struct], Frame], Callable[[Frame], msgspec.Struct]]:
        """``(encode_frame, decode_frame)``: wire v1 in one frame, for a transport that sends one buffer per message.

        ``encode_frame(msg)`` is ``encode(msg)[0]`` and ``decode_frame(body)`` is
        ``decode([body])``: the same bytes, checks and errors. They leave out the
        per-call work of a list of frames, which a small message feels (SGLang's
        ``sock_send`` and ``sock_recv`` send one buffer and call their codec once
        per message: control requests, one request's decode step). ValueError
        for a wire v2 codec, whose messages are several frames.
        """
        if self.out_of_band:
            raise ValueError("frame_functions needs wire v1 (out_of_band_threshold=None): wire v2 sends several frames per message")
        walkers, decode_walkers = self._encode_walkers, self._decode_walkers
        state, encode, decode = self._state, self._encoder.encode, self._decoder.decode
        encode_v1, decode_frames, decode_failure, visit = self._encode_v1, self.decode, self._decode_failure, self._decode_untyped
        encode_untyped, splicing_seen = self._encode_untyped, self._splicing_seen
        short_below = self._short_below

        def unknown(value: Any, visit: Any, path: Tuple) -> object:  # the walk of a class that is not a message: never called
            raise AssertionError("not a message class")

        def encode_frame(msg: msgspec.Struct) -> Frame:
            walk = walkers.get(type(msg), unknown)
            if walk is unknown:
                return self.encode(msg)[0]  # not a message: the general path raises its EncodeError
            wire_msg = msg
            try:
                if walk is not None:
                    wire_msg = walk(msg, encode_untyped, ())
                body = encode(wire_msg)
            except BaseException as exc:
                state.splicer = None  # the hook may have held buffers back before the failure
                if not isinstance(exc, Exception):
                    raise
                return encode_v1(msg, walk)  # again, to raise the located error
            return body if not splicing_seen[0] or state.splicer is None else self._spliced(body, wire_msg)

        def decode_frame(body: Frame) -> msgspec.Struct:
            if type(body) is not bytes or len(body) >= short_below:
                return decode_frames([body])
            try:
                msg = decode(body)
            except _DECODE_FAILURES as exc:
                raise decode_failure(body, exc) from None
            walk = decode_walkers[type(msg)]
            return msg if walk is None else walk(msg, visit, ())  # type: ignore[return-value]  # a walk returns its struct's type

        return encode_frame, decode_frame

    def _encode_out_of_band(self, msg: msgspec.Struct, walk: Optional[Walker], state: _CallState) -> Frames:
        """Wire v2: the body, then every buffer at or over the threshold, collected by the hook."""
        frames: Frames = [b""]
        state.frames = frames  # the hook appends here, buffers inside untyped tuples too
        try:
            wire_msg = msg if walk is None else walk(msg, self._encode_untyped, ())
            frames[0] = self._encoder.encode(wire_msg)
        except (TypeError, OverflowError, ValueError) as exc:
            located = self._located_encode_failure(msg, exc)
            if located is None:
                raise
            raise located from exc
        finally:
            state.frames = None
        return frames

    def _located_encode_failure(self, msg: object, exc: BaseException) -> Optional[EncodeError]:
        """The located :class:`EncodeError` for msgspec's own error ``exc``; None when ``exc`` is raised as is."""
        if isinstance(exc, EncodeError) or not isinstance(exc, (TypeError, OverflowError, ValueError)):
            return None
        return self._locate_encode_error(msg, exc)

    def _locate_encode_error(self, msg: object, exc: Exception) -> EncodeError:
        failed, self._state.failed = self._state.failed, None
        if failed is not None:
            path = locate(msg, lambda v: v is failed)
        elif isinstance(exc, OverflowError):
            path = locate(msg, lambda v: type(v) is int and not wire.INT_MIN <= v <= wire.UINT_MAX)
            exc = TypeError(f"integer out of msgpack's 64-bit range ({exc})")
        elif isinstance(exc, UnicodeEncodeError):
            path = locate(msg, lambda v: isinstance(v, str) and not _is_utf8(v))
            exc = TypeError(f"text that is not valid UTF-8 (msgpack str must be; {exc.reason})")
        else:
            path = None
        return EncodeError(str(exc), format_path(path) if path is not None else "$")

    def _unspliced_to_wire(self, obj: Any) -> Any:
        return self._to_wire(obj, False)

    def _to_wire(self, obj: Any, splice: bool = True) -> Any:
        """What msgspec writes for ``obj`` (the encoder's hook); ``splice``: a large v1 buffer may become a placeholder."""
        if type(obj) is array:  # first: the most frequent in requests (token ids), and the cheapest test
            head = _ARRAY_HEADS.get(obj.typecode)
            if head is None or not len(obj):
                return self._buffer_ext(wire.EXT_ARRAY, obj, buffers.array_to_wire, splice)
            return self._buffer_payload(wire.EXT_ARRAY, head, memoryview(obj).cast("B"), splice)
        if isinstance(obj, torch.Tensor):
            raw = buffers.plain_tensor_bytes(obj)
            if raw is None:
                return self._buffer_ext(wire.EXT_TORCH_TENSOR, obj, buffers.tensor_to_wire, splice)
            key = (obj.shape, obj.dtype)
            head = self._tensor_heads.get(key)
            if head is None:
                head = self._layout_head([list(obj.shape), torch_dtype_name(obj.dtype), "cpu"])
                _remember(self._tensor_heads, key, head)
            return self._buffer_payload(wire.EXT_TORCH_TENSOR, head, raw, splice)
        if type(obj) is np.ndarray:
            return self._buffer_ext(wire.EXT_NDARRAY, obj, buffers.ndarray_to_wire, splice)
        if type(obj) is Int128:
            return msgspec.msgpack.Ext(wire.EXT_BIGINT, _bigint_bytes(obj))
        self._state.failed = obj
        if isinstance(obj, np.generic):
            raise TypeError(
                f"numpy scalar {type(obj).__name__} where the schema declares a builtin type; "
                "send .item() or declare the field untyped"
            )
        raise TypeError(f"{type(obj).__qualname__} cannot be carried by the reference schema")

    def _buffer_ext(self, code: int, obj: Any, to_wire, splice: bool) -> Any:
        try:
            metadata, raw = to_wire(obj)
        except TypeError:
            self._state.failed = obj
            raise
        return self._buffer_payload(code, self._layout_head(metadata), raw, splice)

    @staticmethod
    def _layout_head(metadata: object) -> bytes:
        """The buffer layout up to the raw bytes: u32 length, then the metadata."""
        meta = msgspec.msgpack.encode(metadata)
        return wire.U32.pack(len(meta)) + meta

    def _buffer_payload(self, code: int, head: bytes, raw: memoryview, splice: bool) -> Any:
        """The ext for a buffer: in band, out of band (wire v2), or a splice placeholder (wire v1)."""
        threshold = self.out_of_band_threshold
        if threshold is None:
            if splice and len(raw) >= SPLICE_MIN_BYTES:
                state = self._state
                splicer = state.splicer
                if splicer is None:
                    self._splicing_seen[0] = True
                    state.splicer = splicer = BufferSplicer()
                return splicer.placeholder(code, head, raw)
        elif len(raw) >= threshold and len(raw) > 0:
            frames = cast(List[Any], self._state.frames)  # encode sets it whenever there is a threshold
            frames.append(raw)
            return msgspec.msgpack.Ext(wire.OUT_OF_BAND_OFFSET + code, head + wire.U32.pack(len(frames) - 1))
        return msgspec.msgpack.Ext(code, head + raw)

    def _encode_untyped(self, kind: str, value: object, path: Tuple) -> object:
        if kind == "opaque":
            return value  # a PickleWrapper the caller put there travels as is
        return self._untyped_to_wire(value, path, 0)

    def _untyped_to_wire(self, value: object, path: Tuple, depth: int) -> object:
        """Rewrite an untyped value so that msgpack keeps its exact Python type."""
        if depth > self.limits.max_depth:
            raise EncodeError(f"untyped value nested deeper than {self.limits.max_depth}", format_path(path))
        t = type(value)
        if value is None or t is str or t is bytes or t is bool or t is float:
            return value
        if t is int:
            value = cast(int, value)  # t is type(value)
            if wire.INT_MIN <= value <= wire.UINT_MAX:
                return value
            if not Int128.MIN <= value <= Int128.MAX:
                raise EncodeError(f"integer {value} does not fit in 128 bits", format_path(path))
            return msgspec.msgpack.Ext(wire.EXT_BIGINT, _bigint_bytes(value))
        if t is list:
            value = cast(list, value)
            if depth < self.limits.max_depth and wire.all_plain(value):  # at the limit, the walk below raises on an item
                return value
            # the dict branch below reuses the name
            out: Union[List[object], Dict[object, object]] = [self._untyped_to_wire(v, path + (i,), depth + 1) for i, v in enumerate(value)]
            return value if all(a is b for a, b in zip(out, value)) else out
        if t is dict:
            if depth < self.limits.max_depth and _plain_dict(cast(dict, value)):
                return value
            out = {}
            changed = False
            for k, v in cast(dict, value).items():
                if type(k) not in _UNTYPED_KEY_TYPES:
                    raise EncodeError(f"dict key of type {type(k).__qualname__} in an untyped field", format_path(path))
                nv = self._untyped_to_wire(v, path + (k,), depth + 1)
                changed |= nv is not v
                out[k] = nv
            return out if changed else value
        if t is tuple:
            items = [self._untyped_to_wire(v, path + (i,), depth + 1) for i, v in enumerate(cast(tuple, value))]
            # never spliced: a placeholder inside this payload would not match its length
            return msgspec.msgpack.Ext(wire.EXT_TUPLE, self._unspliced_encoder.encode(items))
        if t is torch.Size:
            return msgspec.msgpack.Ext(wire.EXT_TORCH_SIZE, msgspec.msgpack.encode(list(cast(torch.Size, value))))
        if isinstance(value, enum.Enum):
            if self._enums_by_name.get(t.__name__) is not t:
                raise EncodeError(f"enum {t.__qualname__} is not an enum of the schema", format_path(path))
            return msgspec.msgpack.Ext(wire.EXT_ENUM, msgspec.msgpack.encode([t.__name__, value.value]))
        if isinstance(value, np.generic):
            try:
                metadata, raw = buffers.numpy_scalar_to_wire(value)
            except TypeError as exc:
                raise EncodeError(str(exc), format_path(path)) from None
            meta = msgspec.msgpack.encode(metadata)
            return msgspec.msgpack.Ext(wire.EXT_NUMPY_SCALAR, b"".join((wire.U32.pack(len(meta)), meta, raw)))
        if isinstance(value, _TYPED_BUFFERS) or t is Int128:
            return value  # the enc_hook writes these the same way in any position
        raise EncodeError(
            f"{t.__qualname__} in an untyped field would not decode back to {t.__qualname__}",
            format_path(path),
        )

    # --- decode -------------------------------------------------------------

    def decode(self, frames: Union[Sequence[Any], bytes, bytearray, memoryview]) -> msgspec.Struct:
        """The message in ``frames``; :class:`DecodeError` for anything malformed or over the limits."""
        views: Optional[List[memoryview]] = None
        if type(frames) is list and len(frames) == 1 and type(frames[0]) is bytes:
            # wire v1's usual shape, received as bytes: nothing to view, no frame to account for
            body: Any = frames[0]
            if len(body) < self._short_below:
                # the commonest call, written out: two Python calls fewer, which control messages feel (docs/benchmarks.md)
                try:
                    msg = self._decoder.decode(body)
                except _DECODE_FAILURES as exc:
                    raise self._decode_failure(body, exc) from None
                walk = self._decode_walkers[type(msg)]
                return msg if walk is None else walk(msg, self._decode_untyped, ())  # type: ignore[return-value]  # as below
            if len(body) > self.limits.max_message_bytes:
                raise DecodeError(f"message of {len(body)} bytes exceeds the limit of {self.limits.max_message_bytes}", "$")
        else:
            views = self._frame_views(frames)
            body = views[0]
        pause = len(body) >= self._pause_gc_at and gc.isenabled()
        if pause:
            gc.disable()
        try:
            msg = self._decode_body(body) if views is None or len(views) == 1 else self._decode_with_buffers(views)
            walk = self._decode_walkers[type(msg)]  # the decoder returns only message classes
            return msg if walk is None else walk(msg, self._decode_untyped, ())  # type: ignore[return-value]  # a walk returns its struct's type
        finally:
            if pause:
                gc.enable()

    def _decode_with_buffers(self, views: List[memoryview]) -> msgspec.Struct:
        """Decode a body whose out-of-band references may use ``views[1:]``, each exactly once."""
        state = self._state
        state.views = views
        state.used = used = [False] * len(views)
        try:
            msg = self._decode_body(views[0])
        finally:
            state.views = state.used = None
        unused = [i for i in range(1, len(views)) if not used[i]]
        if unused:
            raise DecodeError(f"frame(s) {unused} are not referenced by the message body", "$")
        return msg

    def _decode_body(self, body: Any) -> msgspec.Struct:
        """msgspec's decode of ``body``, every failure turned into a located :class:`DecodeError`."""
        try:
            return self._decoder.decode(body)
        except _DECODE_FAILURES as exc:
            raise self._decode_failure(body, exc) from None

    def _decode_failure(self, body: Any, exc: BaseException) -> DecodeError:
        """The located :class:`DecodeError` for a failure of msgspec's decode of ``body`` (one of ``_DECODE_FAILURES``)."""
        if isinstance(exc, _ExtFailure):
            return self._locate_ext_failure(body, exc)
        if isinstance(exc, DecodeError):  # raised by a hook, already located
            return exc
        if isinstance(exc, RecursionError):
            return DecodeError("message nested deeper than the decoder's recursion limit", "$")
        return self._named(body, str(exc))  # msgspec.DecodeError, ValidationError included

    def _frame_views(self, frames) -> List[memoryview]:
        if isinstance(frames, (bytes, bytearray, memoryview)):
            frames = [frames]
        elif not isinstance(frames, (list, tuple)):
            raise DecodeError(f"frames must be a list of bytes-like objects, got {type(frames).__qualname__}", "$")
        if not frames:
            raise DecodeError("no frames", "$")
        if len(frames) > self.limits.max_frames:
            raise DecodeError(f"{len(frames)} frames exceed the limit of {self.limits.max_frames}", "$")
        views = []
        total = 0
        for i, frame in enumerate(frames):
            try:
                view = memoryview(frame)
            except TypeError:
                raise DecodeError(f"frame {i} is a {type(frame).__qualname__}, not bytes-like", "$") from None
            if view.ndim != 1 or view.itemsize != 1 or not view.c_contiguous:
                if not view.c_contiguous:
                    raise DecodeError(f"frame {i} is not a contiguous byte buffer", "$")
                view = view.cast("B")
            total += view.nbytes
            views.append(view)
        if total > self.limits.max_message_bytes:
            raise DecodeError(f"message of {total} bytes exceeds the limit of {self.limits.max_message_bytes}", "$")
        return views

    def _named(self, body, message: str) -> DecodeError:
        reason, positional = parse_msgspec_path(message)
        if positional is None:
            return DecodeError(reason, "$")
        generic = generic_body(body)
        try:
            path = named_path(self._root_type, generic, positional)
        except Exception:  # a best-effort translation must never hide the real error
            path = format_path(positional)
        return DecodeError(reason, path)

    def _locate_ext_failure(self, body, failure: _ExtFailure) -> DecodeError:
        reason = f"{wire.EXT_NAMES.get(failure.code, f'ext {failure.code}')}: {failure.reason}"
        generic = generic_body(body)
        positional = None
        if generic is not None:
            positional = locate(
                generic,
                lambda v: isinstance(v, msgspec.msgpack.Ext) and v.code == failure.code and v.data == failure.data,
            )
        if positional is None:
            return DecodeError(reason, "$")
        try:
            return DecodeError(reason, named_path(self._root_type, generic, list(positional)))
        except Exception:
            return DecodeError(reason, format_path(positional))

    def _dec_hook(self, tp: type, obj: Any) -> Any:
        if isinstance(obj, tp):
            return obj
        if tp is Int128 and type(obj) is int:
            return Int128(obj)
        raise TypeError(f"Expected `{tp.__qualname__}`, got `{type(obj).__qualname__}`")

    def _ext_hook(self, code: int, data: memoryview) -> Any:
        try:
            if code == wire.EXT_ARRAY:
                # token ids travel as arrays (decode_ids), one per request of every batch: a known head
                # is the validated layout already, and skips the three calls of the general path below
                typecode = _ARRAY_TYPECODE_BY_HEAD.get(bytes(data[:_ARRAY_HEAD_SIZE]))
                if typecode is not None:
                    return buffers.array_from_layout(typecode, data[_ARRAY_HEAD_SIZE:], self.limits)
            if code in _IN_BAND_CODES:
                layout, raw = self._buffer_layout(code, data, out_of_band=False)
                # a writable body (bytearray, a ZeroMQ frame received with copy=False) is used in place
                return self._build_buffer(code, layout, raw, writable=not data.readonly)
            return self._ext_value(code, data)
        except (_ExtFailure, DecodeError):
            raise
        except RecursionError:
            raise _ExtFailure(code, bytes(data), "nested too deeply") from None
        except Exception as exc:  # every hostile payload becomes a located DecodeError
            raise _ExtFailure(code, bytes(data), str(exc) or type(exc).__name__) from None

    def _ext_value(self, code: int, data: memoryview) -> Any:
        limits = self.limits
        if code in _OUT_OF_BAND_CODES:
            code -= wire.OUT_OF_BAND_OFFSET
            layout, rest = self._buffer_layout(code, data, out_of_band=True)
            index = wire.U32.unpack(rest)[0]
            # set only when the message has several frames: with one, no index can pass the check
            state = self._state
            views, used = state.views, state.used
            count = 1 if views is None else len(views)
            if not 1 <= index < count:
                raise ValueError(f"refers to frame {index}, but the message has {count} frame(s)")
            views, used = cast(Sequence[Any], views), cast(List[bool], used)  # both set when count > 1
            if used[index]:
                raise ValueError(f"frame {index} is referenced twice")
            used[index] = True
            raw = views[index]
            return self._build_buffer(code, layout, raw, writable=not raw.readonly)
        if code == wire.EXT_TUPLE:
            state = self._state
            state.depth += 1
            try:
                if state.depth > limits.max_depth:
                    raise ValueError(f"tuples nested deeper than {limits.max_depth}")
                items = self._untyped_decoder.decode(data)
            finally:
                state.depth -= 1
            if type(items) is not list:
                raise ValueError("tuple payload is not an array")
            return tuple(items)
        if code == wire.EXT_TORCH_SIZE:
            dims = msgspec.msgpack.decode(data)
            if type(dims) is not list or len(dims) > 64 or not all(type(d) is int and d >= 0 for d in dims):
                raise ValueError("torch.Size payload is not an array of non-negative ints")
            return torch.Size(dims)
        if code == wire.EXT_NUMPY_SCALAR:
            metadata, raw = _split_buffer(data)
            return buffers.numpy_scalar_from_wire(metadata, raw)
        if code == wire.EXT_BIGINT:
            if not 1 <= len(data) <= wire.BIGINT_MAX_BYTES:
                raise ValueError(f"big integer of {len(data)} bytes (1 to {wire.BIGINT_MAX_BYTES} allowed)")
            return int.from_bytes(data, "big", signed=True)
        if code == wire.EXT_ENUM:
            payload = msgspec.msgpack.decode(data)
            if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not str:
                raise ValueError("enum payload is not [name, value]")
            cls = self._enums_by_name.get(payload[0])
            if cls is None:
                raise ValueError(f"{payload[0]!r:.60} is not an enum of the schema")
            return cls(payload[1])
        if code in (wire.EXT_SGLANG_SHM_POINTER, wire.EXT_SGLANG_CUDA_IPC):
            raise ValueError("process-local handles are not accepted by the reference codec")
        raise ValueError(f"unknown ext code {code}")

    def _buffer_layout(self, code: int, data: memoryview, out_of_band: bool) -> Tuple[Any, memoryview]:
        """The validated layout of a buffer ext's metadata, and the payload after the metadata.

        Validation is a pure function of the metadata bytes (limits and
        ``map_location`` are fixed per codec), so its result is kept per distinct
        metadata: a batch of tensors of a few shapes is validated a few times.
        Only metadata that passed is kept; a callable ``map_location`` is
        called for every tensor, as documented.
        """
        end = _metadata_end(data)
        rest = data[end:]
        if out_of_band and len(rest) != wire.U32.size:
            raise ValueError(f"out-of-band payload must end in a 4-byte frame index, found {len(rest)} bytes")
        key = (code, bytes(data[wire.U32.size : end]))
        cache = self._layouts
        layout = cache.get(key) if cache is not None else None
        if layout is None:
            layout = self._new_layout(key)
        return layout, rest

    def _new_layout(self, key: Tuple[int, bytes]) -> Any:
        """Validate the metadata bytes ``key[1]`` of a buffer of ext code ``key[0]``; keep the layout if caching."""
        code, meta = key
        metadata = msgspec.msgpack.decode(meta)
        if code == wire.EXT_TORCH_TENSOR:
            layout: Any = buffers.tensor_layout(metadata, self.limits, self.map_location)
        elif code == wire.EXT_NDARRAY:
            layout = buffers.ndarray_layout(metadata, self.limits)
        else:
            layout = buffers.array_layout(metadata, self.limits)
        if self._layouts is not None:
            _remember(self._layouts, key, layout)
        return layout

    def _build_buffer(self, code: int, layout: Any, raw: memoryview, writable: bool) -> Any:
        if code == wire.EXT_TORCH_TENSOR:
            return buffers.tensor_from_layout(layout, raw, writable)
        if code == wire.EXT_NDARRAY:
            return buffers.ndarray_from_layout(layout, raw, writable)
        return buffers.array_from_layout(layout, raw, self.limits)

    def _decode_untyped(self, kind: str, value: object, path: Tuple) -> object:
        if kind == "opaque":
            if not isinstance(value, PickleWrapper):
                return value
            if not self.allow_pickle:
                raise DecodeError(
                    "pickled payload refused (a PickleWrapper; build the codec with allow_pickle=True to accept it)",
                    format_path(path),
                )
            try:
                return pickle.loads(value.data)
            except Exception as exc:
                raise DecodeError(f"pickled payload failed to unpickle: {exc}", format_path(path)) from None
        _check_depth(value, path, 0, self.limits.max_depth)
        return value


def _check_depth(value: object, path: Tuple, depth: int, limit: int) -> None:
    """Bound the depth of an untyped value, and refuse map keys and leaves the reference never writes."""
    if depth > limit:
        raise DecodeError(f"untyped value nested deeper than {limit}", format_path(path))
    t = type(value)
    # only plain leaves below: nothing to bound or refuse (found without a call per item)
    if (t is list or t is tuple) and wire.all_plain(cast(Sequence[object], value)):
        return
    if t is dict and _plain_dict(cast(dict, value)):
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, (list, tuple, dict)):
                _check_depth(v, path + (i,), depth + 1, limit)
            elif type(v) in _FOREIGN_LEAVES:
                _refuse_leaf(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            if type(k) not in _UNTYPED_KEY_TYPES:
                raise DecodeError(
                    f"map key of type {type(k).__name__} in an untyped field (keys are str, int, float, bool, nil or bin)",
                    format_path(path),
                )
            if isinstance(v, (list, tuple, dict)):
                _check_depth(v, path + (k,), depth + 1, limit)
            elif type(v) in _FOREIGN_LEAVES:
                _refuse_leaf(v, path + (k,))
    elif type(value) in _FOREIGN_LEAVES:
        _refuse_leaf(value, path)


# msgspec decodes the msgpack timestamp extension (-1) by itself; the reference
# never writes it and could not re-encode it, so a second hop would fail.
_FOREIGN_LEAVES = frozenset({datetime.datetime})


def _refuse_leaf(value: object, path: Tuple) -> None:
    raise DecodeError(f"{type(value).__name__} (msgpack timestamp ext -1) is not part of the reference wire", format_path(path))


def _plain_dict(value: Dict[object, object]) -> bool:
    """Whether every key is one the wire allows and every value a plain leaf (:func:`wire.all_plain`): nothing to rewrite or refuse."""
    return _UNTYPED_KEY_TYPES.issuperset(map(type, value)) and wire.all_plain(value.values())


def _remember(cache: Dict[Any, Any], key: Any, value: Any) -> None:
    """Keep ``value`` under ``key`` in a cache bounded to :data:`_LAYOUT_CACHE_SIZE` entries.

    Full, the cache starts over: bounded whatever a peer sends, refilled by what recurs.
    """
    if len(cache) >= _LAYOUT_CACHE_SIZE:
        cache.clear()
    cache[key] = value


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bigint_bytes(value: int) -> bytes:
    """Minimal signed big-endian bytes: -(2**127) and 2**127 - 1 both take 16."""
    magnitude = value if value >= 0 else ~value
    return value.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def _metadata_end(data: memoryview) -> int:
    """Where the metadata of a buffer-layout payload ends (see wire.py); ``ValueError`` when it cannot."""
    if len(data) < wire.U32.size:
        raise ValueError("buffer payload is shorter than its metadata length prefix")
    (size,) = wire.U32.unpack_from(data)
    end = wire.U32.size + size
    if end > len(data):
        raise ValueError(f"metadata length {size} runs past the end of the {len(data)}-byte payload")
    return end


def _split_buffer(data: memoryview) -> Tuple[object, memoryview]:
    end = _metadata_end(data)
    return msgspec.msgpack.decode(data[wire.U32.size : end]), data[end:]


