"""Property 4: a second hop (router, DP controller) re-encodes a decoded message byte for byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.properties import PropertyFailure, check_equivalent, each_message_type, frames_bytes, message_strategy, summarise


@each_message_type
@given(data=st.data())
def test_encoding_is_deterministic_and_a_second_hop_reencodes_identically(codec, tag, data):
    msg = data.draw(message_strategy(tag, codec), label="message")
    first = frames_bytes(codec.encode(msg))
    if not codec.caps.byte_stable:
        hop = codec.decode(first)
        check_equivalent(msg, codec.decode(codec.encode(hop)), codec=codec.name, what="the message changed over two hops", msg=msg)
        return
    if frames_bytes(codec.encode(msg)) != first:
        raise PropertyFailure(f"[{codec.name}] encoding the same message twice gave different bytes\n  shrunk message: {summarise(msg)}")
    hop = codec.decode(first)
    second = frames_bytes(codec.encode(hop))
    if second != first:
        where = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
        raise PropertyFailure(
            f"[{codec.name}] encode(decode(encode(m))) differs from encode(m) in frame {where} "
            f"({len(first)} vs {len(second)} frames)\n  shrunk message: {summarise(msg)}"
        )
    check_equivalent(msg, codec.decode(second), codec=codec.name, what="the message changed over two hops", msg=msg)
