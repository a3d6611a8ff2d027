"""Framing of the testee protocol, the reference testee's answers, and the worked example in PROTOCOL.md.

Everything here runs in-process (no testee is started); :mod:`.test_client`
drives real programs over pipes.
"""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path

import msgspec
import pytest

from conformance.testee import protocol
from conformance.testee.protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ProtocolError,
    TruncatedMessage,
    read_message,
    write_message,
)
from conformance.testee.reference_testee import ReferenceTestee
from reference_codec import ReferenceCodec, samples

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "PROTOCOL.md"


class Trickle:
    """A readable stream that returns at most ``step`` bytes per read, like a raw pipe under load."""

    def __init__(self, data: bytes, step: int = 1):
        self._data, self._pos, self._step = data, 0, step

    def read(self, n: int = -1) -> bytes:
        n = self._step if n < 0 else min(n, self._step)
        chunk = self._data[self._pos : self._pos + n]
        self._pos += len(chunk)
        return chunk


def framed(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


# --- framing ------------------------------------------------------------------------


MESSAGES = [
    {"id": 1, "op": "hello", "frames": [], "protocol": 1},
    {"id": 2**63, "op": "decode", "frames": [b"", b"\x00" * 70_000, bytes(range(256))]},
    {"id": 3, "ok": False, "error_kind": "decode_error", "message": "bad – ünïcode 🙂"},
    {},
]


def test_messages_round_trip_in_order_then_end_cleanly():
    stream = io.BytesIO()
    for message in MESSAGES:
        write_message(stream, message)
    stream.seek(0)
    assert [read_message(stream) for _ in MESSAGES] == MESSAGES
    assert read_message(stream) is None
    assert read_message(stream) is None


def test_frame_layout_is_a_big_endian_u32_length_then_a_msgpack_map():
    stream = io.BytesIO()
    write_message(stream, {"id": 7})
    assert stream.getvalue() == b"\x00\x00\x00\x05" + b"\x81\xa2id\x07"


def test_reads_survive_short_reads():
    data = b"".join(framed(msgspec.msgpack.encode(m)) for m in MESSAGES)
    stream = Trickle(data, step=3)
    assert [read_message(stream) for _ in MESSAGES] == MESSAGES
    assert read_message(stream) is None


def test_any_integer_width_and_key_order_is_accepted():
    # "id": 1 as uint32, keys in a different order than the suite writes them.
    body = b"\x82\xa2ok\xc3\xa2id\xce\x00\x00\x00\x01"
    assert read_message(io.BytesIO(framed(body))) == {"ok": True, "id": 1}


def test_oversize_message_is_refused_before_anything_is_written():
    stream = io.BytesIO()
    with pytest.raises(ProtocolError, match=r"message of \d+ bytes exceeds the limit of 100 bytes"):
        write_message(stream, {"frames": [b"x" * 200]}, max_size=100)
    assert stream.getvalue() == b""


def test_oversize_length_is_refused_without_reading_the_body():
    stream = io.BytesIO(struct.pack(">I", 101) + b"\x80" * 101)
    with pytest.raises(ProtocolError, match="message length 101 exceeds the limit of 100 bytes"):
        read_message(stream, max_size=100)
    assert stream.tell() == 4


def test_text_on_the_stream_is_named_as_text():
    with pytest.raises(ProtocolError, match=r"prefix b'Trac' is ASCII text: is something printing"):
        read_message(io.BytesIO(b"Traceback (most recent call last):\n"))
    assert DEFAULT_MAX_MESSAGE_BYTES < 0x20 << 24  # below any length that printable text spells


@pytest.mark.parametrize("data", [b"\x00", b"\x00\x00", b"\x00\x00\x00"], ids=["1", "2", "3"])
def test_truncated_prefix(data):
    with pytest.raises(TruncatedMessage, match=rf"stream ended inside a length prefix \({len(data)} of 4 bytes"):
        read_message(io.BytesIO(data))


def test_truncated_body():
    with pytest.raises(TruncatedMessage, match="stream ended inside a message: got 3 of 10 bytes"):
        read_message(io.BytesIO(struct.pack(">I", 10) + b"\x83\xa2i"))


@pytest.mark.parametrize(
    "body, match",
    [
        (b"\xc1", r"message of 1 bytes is not valid msgpack: .*invalid opcode"),
        (b"\x81\xa2id", r"message of 4 bytes is not valid msgpack: .*truncated"),
        (b"\x81\xa2id\x01\x02", r"not valid msgpack: .*trailing"),
        (b"\x92\x01\x02", "message is a msgpack list, not a map"),
        (b"\xa5hello", "message is a msgpack str, not a map"),
    ],
    ids=["bad-opcode", "short-map", "trailing", "array", "str"],
)
def test_malformed_body(body, match):
    with pytest.raises(ProtocolError, match=match) as info:
        read_message(io.BytesIO(framed(body)))
    assert not isinstance(info.value, TruncatedMessage)


@pytest.mark.parametrize("bad", [0, -1, 2**32, True, 1.5, None])
def test_max_size_is_validated(bad):
    with pytest.raises(ValueError, match="max_size must be an int from 1 to 4294967295"):
        read_message(io.BytesIO(b""), max_size=bad)


def test_non_dict_message_is_a_type_error():
    with pytest.raises(TypeError, match="a protocol message must be a dict, got list"):
        write_message(io.BytesIO(), [1, 2])


# --- the reference testee's answers (in-process) -----------------------------------------


@pytest.fixture(scope="module")
def testee():
    return ReferenceTestee()


def test_hello_declares_capabilities(testee):
    assert testee.handle({"id": 1, "op": "hello", "frames": []}) == {
        "id": 1, "ok": True, "name": "reference-testee", "wire_compatible": True, "out_of_band": False, "protocol": 1,
    }
    v2 = ReferenceTestee(out_of_band_threshold=256).handle({"id": 2, "op": "hello"})
    assert (v2["name"], v2["out_of_band"]) == ("reference-testee-v2", True)


def test_each_op_answers_canonical_frames(testee):
    msg = samples.batch_token_id_output(2)
    canonical = ReferenceCodec().encode(msg)
    for op in ("encode", "decode", "roundtrip"):
        response = testee.handle({"id": 5, "op": op, "frames": canonical})
        assert response == {"id": 5, "ok": True, "frames": canonical}, op


@pytest.mark.parametrize(
    "request_, kind, match",
    [
        ({"op": "decode", "frames": [b"\x93"]}, "decode_error", "Input data was truncated"),
        ({"op": "decode", "frames": []}, "decode_error", "no frames"),
        ({"op": "decode", "frames": [samples.body_with_feature(samples.tensor_ext(None, b"", code=9))]},
         "decode_error", "unknown ext code 9"),
        ({"op": "encode", "frames": [b"\x91\xa3Nope"]}, "unsupported", "cannot parse the canonical message"),
        ({"op": "roundtrip", "frames": [b""]}, "unsupported", "cannot parse the canonical message"),
        ({"op": "frobnicate", "frames": []}, "unsupported", "unknown op 'frobnicate'"),
        ({"op": "decode", "frames": ["text"]}, "unsupported", "frames must be an array of bin"),
        ({"op": "decode", "frames": b"\x93"}, "unsupported", "frames must be an array of bin"),
    ],
    ids=["truncated", "no-frames", "unknown-ext", "unknown-tag", "empty-canonical", "unknown-op", "str-frame",
         "frames-not-array"],
)
def test_bad_requests_are_answered_not_raised(testee, request_, kind, match):
    response = testee.handle({"id": 9, **request_})
    assert (response["id"], response["ok"], response["error_kind"]) == (9, False, kind)
    assert re.search(match, response["message"]), response["message"]


def test_an_unexpected_exception_is_an_internal_error(testee, monkeypatch):
    def explode(frames):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(testee, "decode", explode)
    response = testee.handle({"id": 4, "op": "decode", "frames": [b"\x90"]})
    assert response == {"id": 4, "ok": False, "error_kind": "internal_error", "message": "RuntimeError: kaboom"}


# --- the worked example in PROTOCOL.md ------------------------------------------------


def _example_blocks() -> list:
    """The byte strings of the code blocks of section 5: the leading hex tokens of every line."""
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    section = text[text.index("## 5. Worked example") : text.index("## 6.")]
    blocks = []
    for block in re.findall(r"```\n(.*?)```", section, flags=re.S):
        data = bytearray()
        for line in block.splitlines():
            for token in line.split():
                if not re.fullmatch(r"[0-9a-f]{2}", token):
                    break
                data.append(int(token, 16))
        blocks.append(bytes(data))
    return blocks


def test_worked_example_bytes_are_what_the_code_writes(testee):
    blocks = _example_blocks()
    assert len(blocks) == 5
    streams = [io.BytesIO(b) for b in blocks]
    messages = [read_message(s) for s in streams]
    assert all(s.read() == b"" for s in streams), "trailing bytes after a worked-example message"
    hello, hello_answer, decode, decode_answer, error_answer = messages

    body = ReferenceCodec().encode(samples.flush_cache())[0]
    assert hello == {"id": 1, "op": "hello", "frames": [], "protocol": 1}
    assert decode == {"id": 2, "op": "decode", "frames": [body]}
    assert testee.handle(hello) == hello_answer
    assert testee.handle(decode) == decode_answer == {"id": 2, "ok": True, "frames": [body]}
    assert testee.handle({"id": 3, "op": "decode", "frames": [b"\x93"]}) == error_answer
    for message, raw in zip(messages, blocks):  # and byte for byte as the writer frames them
        out = io.BytesIO()
        protocol.write_message(out, message)
        assert out.getvalue() == raw
