"""Property 1: decoding what the codec encoded gives back an equivalent message, for every type."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.properties import check_equivalent, draw_message, each_message_type


@each_message_type
@given(data=st.data())
def test_decode_of_encode_is_equivalent_to_the_message(codec, tag, data):
    msg = draw_message(data, tag, codec)
    decoded = codec.decode(codec.encode(msg), type(msg))
    check_equivalent(msg, decoded, codec=codec.name, what="decode(encode(m)) differs from m", msg=msg)
