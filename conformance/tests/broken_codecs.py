"""Deliberately broken codecs, each reproducing a bug class seen during the migration.

Each wraps the reference codec and damages what it decodes in one specific
way. The meta-tests run the suite against each and require it to fail, while
the reference passes the same selection: that is what "the suite has teeth"
means. They are plug-ins like any other: ``--codec conformance.tests.broken_codecs:TupleAsList``.
"""

from __future__ import annotations

import enum
import struct
from typing import Any, Callable

import msgspec
import numpy as np
import torch

from reference_codec import ReferenceCodec


def _walk(value: Any, leaf: Callable[[Any], Any], tuples: Callable = tuple) -> Any:
    """Rebuild ``value`` with ``leaf`` applied to every non-container value (structs included as containers).

    Tuples are rebuilt with ``tuples`` (``list`` turns them into lists).
    """
    if isinstance(value, msgspec.Struct):
        changes = {f: _walk(getattr(value, f), leaf, tuples) for f in value.__struct_fields__}
        return msgspec.structs.replace(value, **changes)
    if type(value) is list:
        return [_walk(v, leaf, tuples) for v in value]
    if type(value) is tuple:
        return tuples(_walk(v, leaf, tuples) for v in value)
    if type(value) is dict:
        return {k: _walk(v, leaf, tuples) for k, v in value.items()}
    return leaf(value)


class _Broken:
    wire_compatible = True
    out_of_band = True

    def __init__(self) -> None:
        self._inner = ReferenceCodec()
        self.decode_error = self._inner.decode_error
        self.name = f"broken:{type(self).__name__}"

    def encode(self, msg):
        return self._inner.encode(msg)

    def decode(self, frames):
        return self.damage(self._inner.decode(frames))

    def damage(self, msg):
        raise NotImplementedError


class TupleAsList(_Broken):
    """Tuples decoded as lists (msgpack has no tuple)."""

    def damage(self, msg):
        return _walk(msg, lambda v: v, tuples=list)


class NoneLogprobAsZero(_Broken):
    """``None`` inside logprob rows decoded as 0.0 (a mis-typed ``List[float]``)."""

    def damage(self, msg):
        changes = {}
        for name in msg.__struct_fields__:
            if name.endswith("_logprobs_val"):
                changes[name] = _walk(getattr(msg, name), lambda v: 0.0 if v is None else v)
        return msgspec.structs.replace(msg, **changes) if changes else msg


class Float64AsFloat32(_Broken):
    """Floats squeezed through float32."""

    def damage(self, msg):
        return _walk(msg, lambda v: struct.unpack("<f", struct.pack("<f", v))[0] if type(v) is float and abs(v) < 3e38 else v)


class BoolAsInt(_Broken):
    """Booleans decoded as ints (``True == 1`` hides it from naive ``==``)."""

    def damage(self, msg):
        return _walk(msg, lambda v: int(v) if type(v) is bool else v)


class NegativeZeroLost(_Broken):
    """``-0.0`` decoded as ``0.0`` (``0.0 == -0.0`` hides it)."""

    def damage(self, msg):
        return _walk(msg, lambda v: 0.0 if type(v) is float and v == 0.0 else v)


class NumpyScalarAsFloat(_Broken):
    """numpy scalars decoded as Python numbers."""

    def damage(self, msg):
        return _walk(msg, lambda v: v.item() if isinstance(v, np.generic) else v)


class TailFieldReset(_Broken):
    """The last field of every message reset to its default, as a reader one schema version behind."""

    def damage(self, msg):
        info = msgspec.inspect.type_info(type(msg))
        last = info.fields[-1]
        if last.required:
            return msg
        default = last.default_factory() if last.default_factory is not msgspec.NODEFAULT else last.default
        return msgspec.structs.replace(msg, **{last.name: default})


class TensorDeviceDropped(_Broken):
    """Tensors land on the CPU whatever device they were sent from."""

    def damage(self, msg):
        return _walk(msg, lambda v: v.cpu() if isinstance(v, torch.Tensor) else v)


class DeviceDroppedSilently(_Broken):
    """A tensor sent from a device this process lacks lands on the CPU, and the codec declares no such mapping.

    Unlike :class:`TensorDeviceDropped`, this shows on a machine without CUDA:
    the reference refuses a ``cuda:N`` tensor there, this codec quietly keeps it.
    """

    def __init__(self) -> None:
        super().__init__()
        self._inner = ReferenceCodec(map_location="cpu")

    def damage(self, msg):
        return msg


class DeviceMappedToCPU(DeviceDroppedSilently):
    """The same placement, declared (``map_location = "cpu"``): conforming."""

    map_location = "cpu"


class EnumAsValue(_Broken):
    """Enum members decoded as their raw values."""

    def damage(self, msg):
        return _walk(msg, lambda v: v.value if isinstance(v, enum.Enum) else v)


class ThreeBugs(_Broken):
    """Three independent bug classes at once: tuples as lists, numpy scalars as Python numbers, ``-0.0`` lost."""

    def damage(self, msg):
        msg = _walk(msg, lambda v: v, tuples=list)
        msg = _walk(msg, lambda v: v.item() if isinstance(v, np.generic) else v)
        return _walk(msg, lambda v: 0.0 if type(v) is float and v == 0.0 else v)


class NegatedFloatsOnTheWire(_Broken):
    """Writes every float negated and negates it back on decode: its own round trip is exact, its bytes are not the wire's.

    Only a peer (the reference reading its bytes, or it reading the
    reference's) can tell: the producer x consumer property.
    """

    def encode(self, msg):
        return self._inner.encode(_walk(msg, _negate))

    def damage(self, msg):
        return _walk(msg, _negate)


def _negate(v):
    return -v if type(v) is float else v


class NondeterministicEncoding(_Broken):
    """Every other ``encode`` appends a ``nil`` past the last field: values survive, the bytes of a second hop differ.

    A decoder ignores extra trailing fields, so every round trip is exact;
    only comparing the bytes of two encodings (the re-encode property) shows it.
    """

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    def encode(self, msg):
        frames = self._inner.encode(msg)
        self._calls += 1
        if self._calls % 2:
            return frames
        body = msgspec.msgpack.decode(bytes(frames[0]), ext_hook=msgspec.msgpack.Ext)
        return [msgspec.msgpack.encode(body + [None]), *frames[1:]]

    def damage(self, msg):
        return msg


class StrictFieldCount(_Broken):
    """Refuses a body whose field count is not its schema's: an older or newer sender's message is rejected."""

    def decode(self, frames):
        if frames:
            body = msgspec.msgpack.decode(bytes(frames[0]), ext_hook=msgspec.msgpack.Ext)
            if isinstance(body, list) and body and isinstance(body[0], str):
                from reference_codec.schema import MESSAGE_TYPES

                cls = MESSAGE_TYPES.get(body[0])
                if cls is not None and len(body) - 1 != len(cls.__struct_fields__):
                    raise self.decode_error(f"{body[0]} has {len(body) - 1} fields, expected {len(cls.__struct_fields__)}")
        return self._inner.decode(frames)

    def damage(self, msg):
        return msg


class NestedTailRequired(_Broken):
    """Refuses a request whose nested ``SamplingParams`` lacks trailing fields, as a reader that made one required would.

    Its own round trips are exact (it writes every field); only a message
    from an older sender, whose nested struct is shorter, shows it.
    """

    def decode(self, frames):
        if frames:
            from reference_codec.schema import MESSAGE_TYPES, SamplingParams

            body = msgspec.msgpack.decode(bytes(frames[0]), ext_hook=msgspec.msgpack.Ext)
            cls = MESSAGE_TYPES.get(body[0]) if isinstance(body, list) and body and isinstance(body[0], str) else None
            if cls is not None and "sampling_params" in cls.__struct_fields__:
                nested = body[1 + cls.__struct_fields__.index("sampling_params")]
                if isinstance(nested, list) and len(nested) < len(SamplingParams.__struct_fields__):
                    raise self.decode_error(f"sampling_params has {len(nested)} fields, expected {len(SamplingParams.__struct_fields__)}")
        return self._inner.decode(frames)

    def damage(self, msg):
        return msg


class FieldInsertedInTheMiddle(_Broken):
    """Exposes a schema (``message_types``) in which ``FlushCacheReqInput`` gained a field before its last one.

    The schema-diff property must call that breaking: an older peer would read
    the new field's value as ``timeout_s``.
    """

    def __init__(self) -> None:
        super().__init__()
        from typing import Optional

        from reference_codec.schema import MESSAGE_TYPES

        newer = msgspec.defstruct(
            "FlushCacheReqInput",
            [("rid", Optional[str], None), ("http_worker_ipc", Optional[str], None), ("inserted", int, 0), ("timeout_s", Optional[float], None)],
            tag=True,
            array_like=True,
        )
        self.message_types = {**MESSAGE_TYPES, "FlushCacheReqInput": newer}

    def damage(self, msg):
        return msg


class NestedFieldInserted(_Broken):
    """Exposes a schema whose ``SamplingParams`` (inside ``TokenizedGenerateReqInput``) gained a field in the middle.

    Top-level fields are unchanged: only a schema diff that looks inside
    nested structs sees that an older peer would misread every later field.
    """

    def __init__(self) -> None:
        super().__init__()
        from msgspec import inspect as mi

        from reference_codec.schema import MESSAGE_TYPES, SamplingParams

        fields = [(f.name, _annotation(SamplingParams, f.name), f.default if f.default is not msgspec.NODEFAULT else None) for f in mi.type_info(SamplingParams).fields]
        fields.insert(3, ("inserted", int, 0))
        newer_sp = msgspec.defstruct("SamplingParams", fields, array_like=True, kw_only=True)
        request = MESSAGE_TYPES["TokenizedGenerateReqInput"]
        request_fields = [
            (f.name, newer_sp if f.name == "sampling_params" else _annotation(request, f.name), *(() if f.required else (f.default if f.default is not msgspec.NODEFAULT else msgspec.field(default_factory=f.default_factory),)))
            for f in mi.type_info(request).fields
        ]
        newer = msgspec.defstruct("TokenizedGenerateReqInput", request_fields, tag=True, array_like=True, kw_only=True)
        self.message_types = {**MESSAGE_TYPES, "TokenizedGenerateReqInput": newer}

    def damage(self, msg):
        return msg


def _annotation(cls, name):
    import typing

    return typing.get_type_hints(cls, include_extras=True)[name]


class AcceptsExtraFrames(_Broken):
    """Decodes a message from its first frame and ignores the others: a stray or duplicated frame is silently lost."""

    def decode(self, frames):
        frames = list(frames)
        if len(frames) > 1:
            try:
                return self._inner.decode(frames[:1])
            except self.decode_error:
                pass  # a wire v2 body that needs its buffers
        return self._inner.decode(frames)

    def damage(self, msg):
        return msg


class DecodesOnlyBytes(_Broken):
    """Refuses any frame that is not ``bytes``: what a receiver gets from ``recv_multipart(copy=False)`` (``zmq.Frame``) is rejected."""

    def decode(self, frames):
        for f in frames:
            if type(f) is not bytes:
                raise self.decode_error(f"frame is a {type(f).__name__}, not bytes")
        return self._inner.decode(frames)

    def damage(self, msg):
        return msg


class UnpicklesOpaqueFields(ReferenceCodec):
    """Runs ``pickle.loads`` on ``PickleWrapper`` payloads straight off the wire."""

    def __init__(self):
        super().__init__(allow_pickle=True)
        self.name = "broken:UnpicklesOpaqueFields"


class CrashesOnJunk(_Broken):
    """Lets a Python exception other than its decode error escape on bad input."""

    def decode(self, frames):
        if frames and len(frames[0]) and frames[0][:1] not in (b"\x90", b"\x91", b"\x92", b"\x93", b"\x94") and bytes(frames[0][:1]) < b"\x90":
            raise IndexError("boom")
        return self._inner.decode(frames)

    def damage(self, msg):
        return msg


# --- decoders the fuzz loop must catch (conformance/tests/test_fuzz_loop.py) ------------

_HUGE_COUNT = b"\xdd\xff\xff\xff\xff"


class _FuzzBroken(ReferenceCodec):
    """The reference codec except on the first input of a run holding a 2**32-1 array count (a lie_count attack).

    "First" across worker restarts: a marker file in ``$IPC_FUZZ_BROKEN_MARKER_DIR``
    (set by the test) records that it has misbehaved, so a run has exactly one finding.
    """

    def misbehave(self) -> Any:
        raise NotImplementedError

    def decode(self, frames):
        import os

        if frames and _HUGE_COUNT in bytes(frames[0]):
            marker = os.path.join(os.environ.get("IPC_FUZZ_BROKEN_MARKER_DIR", "/nonexistent"), type(self).__name__)
            if os.path.isdir(os.path.dirname(marker)) and not os.path.exists(marker):
                open(marker, "w").close()
                return self.misbehave()
        return super().decode(frames)


class HangsOnHugeCount(_FuzzBroken):
    name = "broken:HangsOnHugeCount"

    def misbehave(self):
        import time

        while True:  # what a decoder that trusts a count and waits for the data does
            time.sleep(1)


class DiesOnHugeCount(_FuzzBroken):
    name = "broken:DiesOnHugeCount"

    def misbehave(self):
        import os

        os._exit(3)  # a segfault in a C extension looks the same to the parent


class AllocatesOnHugeCount(_FuzzBroken):
    name = "broken:AllocatesOnHugeCount"

    def misbehave(self):
        block = bytearray(400 << 20)  # touched: resident, not just reserved
        del block
        from reference_codec import DecodeError

        raise DecodeError("refused, but only after allocating 400 MiB")


class UnpicklesBinValues(ReferenceCodec):
    """Unpickles every msgpack bin it finds in the body: code execution from the wire."""

    name = "broken:UnpicklesBinValues"

    def decode(self, frames):
        import pickle

        def unpickle_all(value):
            if isinstance(value, (bytes, bytearray)):
                try:
                    pickle.loads(value)
                except Exception:
                    pass
            elif isinstance(value, (list, tuple)):
                for v in value:
                    unpickle_all(v)
            elif isinstance(value, dict):
                for v in value.values():
                    unpickle_all(v)

        try:
            unpickle_all(msgspec.msgpack.decode(bytes(frames[0]), ext_hook=lambda c, d: None))
        except Exception:
            pass
        return super().decode(frames)


# --- codecs for the runner's own tests (conformance/tests/test_verdict.py) ---------------


class TerminatedMidRun(ReferenceCodec):
    """The reference, until its ``$IPC_TERMINATE_AFTER``-th decode: then the run gets SIGTERM, as from a CI timeout."""

    name = "broken:TerminatedMidRun"
    wire_compatible = True
    out_of_band = True

    def __init__(self):
        super().__init__(out_of_band_threshold=256)
        self._decodes = 0

    def decode(self, frames):
        import os
        import signal

        self._decodes += 1
        if self._decodes == int(os.environ.get("IPC_TERMINATE_AFTER", "0")):
            os.kill(os.getpid(), signal.SIGTERM)
        return super().decode(frames)


class SharedEncodeState(ReferenceCodec):
    """Keeps a message's state on the instance while encoding, as vLLM's encoder does: not thread-safe.

    ``thread_safe`` is declared by the subclass that admits it; this one does not.
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = f"broken:{type(self).__name__}"
        self._current = None

    def encode(self, msg):
        import time

        self._current = msg
        time.sleep(0.002)  # a window in which another thread's message replaces this one
        return super().encode(self._current)


class SharedEncodeStateDeclared(SharedEncodeState):
    """The same codec, declaring it: the suite must then encode one message at a time."""

    thread_safe = False


class SGLangLosesLastInputToken:
    """The installed SGLang's own codec with one more bug: the last input token of every generation request is lost on decode.

    For the gate's meta-test: with SGLang's failure list, which lists what
    SGLang's codec really gets wrong, this one new bug must still fail the run.
    Needs SGLang (``tox -e sglang``).
    """

    name = "broken:SGLangLosesLastInputToken"

    def __init__(self) -> None:
        from conformance.engines.sglang.codec import SGLangCodec

        self._inner = SGLangCodec()
        self.wire_compatible = self._inner.wire_compatible
        self.decode_error = self._inner.decode_error
        self.message_types = self._inner.message_types

    def encode(self, msg):
        return self._inner.encode(msg)

    def decode(self, frames):
        msg = self._inner.decode(frames)
        requests = getattr(msg, "batch", None) if type(msg).__name__ == "BatchTokenizedGenerateReqInput" else [msg]
        for request in requests or ():
            if type(request).__name__ == "TokenizedGenerateReqInput" and request.input_ids:
                request.input_ids = request.input_ids[:-1]
        return msg
