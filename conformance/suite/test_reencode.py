"""Property 4: a second hop (router, DP controller) re-encodes a decoded message byte for byte.

What the second hop's bytes decode to is compared with the message first: a
value lost or changed on the way is a ``differs`` finding; ``bytes-differ`` is
left for bytes that differ while every value is kept (a set written in
another iteration order).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.findings import Finding
from conformance.properties import PropertyFailure, check_equivalent, draw_message, each_message_type, frames_bytes


@each_message_type
@given(data=st.data())
def test_encoding_is_deterministic_and_a_second_hop_reencodes_identically(codec, tag, data):
    msg = draw_message(data, tag, codec)
    first = frames_bytes(codec.encode(msg))
    if not codec.caps.byte_stable:
        hop = codec.decode(first, type(msg))
        check_equivalent(msg, codec.decode(codec.encode(hop), type(msg)), codec=codec.name, what="the message changed over two hops", msg=msg)
        return
    if not _same_bytes(frames_bytes(codec.encode(msg)), first):
        raise PropertyFailure(codec=codec.name, what="encoding the same message twice gave different bytes", message=msg,
                              finding=Finding.of("bytes-differ", "", "encoding twice"))
    hop = codec.decode(first, type(msg))
    # A value that came back changed explains other bytes: say which value (the round-trip finding), not only "other bytes".
    check_equivalent(msg, hop, codec=codec.name, what="the message changed over two hops", msg=msg)
    second = frames_bytes(codec.encode(hop))
    # A second hop that sends another value is a value that differs (SGLang #31339: fields lost on the second
    # hop), never only "other bytes": checked before the bytes, so a list line for byte instability cannot hide it.
    check_equivalent(msg, codec.decode(second, type(msg)), codec=codec.name, what="the message changed over two hops (the second hop sent another value)", msg=msg)
    if not _same_bytes(second, first):
        where = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
        raise PropertyFailure(
            codec=codec.name,
            what="encode(decode(encode(m))) differs from encode(m)",
            message=msg,
            finding=Finding.of("bytes-differ", "", "second hop"),
            details=[f"first differing frame: {where} ({len(first)} vs {len(second)} frames)", *_first_byte_difference(first, second, where)],
        )


def _same_bytes(a, b) -> bool:
    """The property's byte check: the same frames, byte for byte."""
    return a == b


def _first_byte_difference(first, second, frame: int):
    if frame >= min(len(first), len(second)):
        return []
    a, b = first[frame], second[frame]
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return [f"frame {frame} differs from byte {at}: {a[at:at + 16].hex()} vs {b[at:at + 16].hex()} ({len(a)} vs {len(b)} bytes)"]
