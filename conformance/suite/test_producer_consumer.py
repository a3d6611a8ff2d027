"""Property 3: a wire-compatible codec and the reference read each other's bytes (producer x consumer)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.properties import check_equivalent, draw_message, each_message_type
from reference_codec import ReferenceCodec

REFERENCE_V2 = ReferenceCodec(out_of_band_threshold=256)


@pytest.fixture(autouse=True)
def _wire_compatible_only(codec):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility")


@each_message_type
@given(data=st.data())
def test_reference_reads_what_the_codec_writes(codec, reference, tag, data):
    msg = draw_message(data, tag, codec)
    decoded = REFERENCE_V2.decode(codec.encode(msg))  # a v2 reader reads v1 too
    check_equivalent(msg, decoded, codec=codec.name, what="the reference reads the codec's bytes differently", msg=msg)


@each_message_type
@given(data=st.data())
def test_codec_reads_what_the_reference_writes(codec, reference, tag, data):
    msg = draw_message(data, tag, codec)
    producer = REFERENCE_V2 if codec.caps.out_of_band else reference
    decoded = codec.decode(producer.encode(msg))
    check_equivalent(msg, decoded, codec=codec.name, what=f"the codec reads {producer!r} bytes differently", msg=msg)
