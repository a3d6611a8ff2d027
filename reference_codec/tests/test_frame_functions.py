"""``ReferenceCodec.frame_functions()``: one frame in, one frame out, the same bytes, values and errors as ``encode``/``decode``."""

from __future__ import annotations

import msgspec
import pytest
import torch
from hypothesis import HealthCheck, given, settings

from reference_codec import DecodeError, EncodeError, ReferenceCodec
from reference_codec import schema as s
from reference_codec.samples import minimal
from reference_codec.splice import SPLICE_MIN_BYTES
from strategies import messages

V1 = ReferenceCodec()
ENCODE_FRAME, DECODE_FRAME = V1.frame_functions()


def _error(call, *args):
    with pytest.raises((EncodeError, DecodeError)) as info:
        call(*args)
    return type(info.value), str(info.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(messages())
def test_a_frame_is_the_body_encode_writes_and_decodes_as_decode_reads_it(msg):
    body = ENCODE_FRAME(msg)
    assert bytes(body) == bytes(V1.encode(msg)[0])
    for frame in (bytes(body), bytearray(body), memoryview(bytes(body))):  # bytes take the short path, the others the general one
        # two decoded values compare by their content: the reference's own encoding of each (NaN, big ints, tensors)
        assert _frames(V1.encode(DECODE_FRAME(frame))) == _frames(V1.encode(V1.decode([bytes(body)])))


def _frames(frames) -> list[bytes]:
    return [bytes(f) for f in frames]


class Blob(msgspec.Struct, tag=True, array_like=True):
    """A message with no untyped or opaque position (no walk): the frame functions' shortest encode path."""

    rid: str
    data: torch.Tensor


def _big_tensor() -> torch.Tensor:
    return torch.arange(SPLICE_MIN_BYTES // 4 + 1, dtype=torch.float32)


def _walked() -> s.BatchEmbeddingOutput:
    msg = minimal(s.BatchEmbeddingOutput)
    msg.rids, msg.embeddings, msg.pooled_hidden_states = ["r"], [[]], [_big_tensor()]
    return msg


@pytest.mark.parametrize(
    "codec, msg, tensor",
    [(V1, _walked(), lambda m: m.pooled_hidden_states[0]), (ReferenceCodec(message_types=[Blob]), Blob("r", _big_tensor()), lambda m: m.data)],
    ids=["walked", "not-walked"],
)
def test_a_large_buffer_is_spliced_into_the_frame_as_encode_does(codec, msg, tensor):
    encode_frame, decode_frame = codec.frame_functions()
    body = encode_frame(msg)
    assert bytes(body) == bytes(codec.encode(msg)[0])
    assert torch.equal(tensor(decode_frame(bytes(body))), tensor(msg))
    assert codec._state.splicer is None  # nothing held back for the next call


@pytest.mark.parametrize("path", ["encode", "frame_functions"])
def test_the_first_buffer_a_fresh_codec_holds_back_is_spliced_into_its_frame(path):
    # the thread-local splicer is read only once some buffer has been held back (a per-codec flag):
    # the call that holds back the first one must still splice it
    codec = ReferenceCodec(message_types=[Blob])
    msg = Blob("r", _big_tensor())
    body = codec.encode(msg)[0] if path == "encode" else codec.frame_functions()[0](msg)
    assert not isinstance(body, bytes)  # spliced frames are the assembled buffer, never msgspec's bytes
    assert torch.equal(codec.decode([bytes(body)]).data, msg.data)
    assert codec._state.splicer is None


def test_a_refused_message_raises_encode_error_with_the_same_path_and_leaves_nothing_held_back():
    big = torch.arange(SPLICE_MIN_BYTES // 4 + 1, dtype=torch.float32)
    bad = minimal(s.BatchEmbeddingOutput)
    bad.rids, bad.embeddings, bad.pooled_hidden_states = ["r", "s"], [[], []], [big, object()]
    assert _error(ENCODE_FRAME, bad) == _error(V1.encode, bad)
    assert V1._state.splicer is None
    for not_a_message in (object(), {"rid": "x"}):
        assert _error(ENCODE_FRAME, not_a_message) == _error(V1.encode, not_a_message)


@pytest.mark.parametrize(
    "body",
    [
        msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, 1.5])[:-3],
        msgspec.msgpack.encode(["NoSuchMessage", None, None]),
        msgspec.msgpack.encode(["FlushCacheReqInput", "a", None, "not a float"]),
        b"",
        b"\xc1",
    ],
    ids=["truncated", "unknown-tag", "wrong-field-type", "empty", "never-used-byte"],
)
def test_a_malformed_frame_raises_the_decode_error_decode_raises(body):
    expected = _error(V1.decode, [body])
    assert _error(DECODE_FRAME, body) == expected
    assert _error(DECODE_FRAME, bytearray(body)) == expected


def test_wire_v2_has_no_frame_functions():
    with pytest.raises(ValueError, match="wire v1"):
        ReferenceCodec(out_of_band_threshold=0).frame_functions()
