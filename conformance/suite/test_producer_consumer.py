"""Property 3: a wire-compatible codec and the reference read each other's bytes (producer x consumer)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.properties import ENGINE, check_equivalent, draw_message, each_message_type, reference_frames


@pytest.fixture(autouse=True)
def _wire_compatible_only(codec):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility")
    if ENGINE.wire_reference is None:
        pytest.skip(f"engine {ENGINE.name} has no wire reference to read and write")


@pytest.fixture(scope="module")
def reader():
    """The engine's wire reference that reads every form (for SGLang, a v2 reader reads v1 too)."""
    return ENGINE.wire_reference(True)


@pytest.fixture(scope="module")
def writer(codec):
    """The engine's wire reference writing the form the codec declares it reads."""
    return ENGINE.wire_reference(codec.caps.out_of_band)


@each_message_type
@given(data=st.data())
def test_reference_reads_what_the_codec_writes(codec, reader, tag, data):
    msg = draw_message(data, tag, codec)
    decoded = _decode(reader, codec.encode(msg), type(msg))
    check_equivalent(msg, decoded, codec=codec.name, what="the reference reads the codec's bytes differently", msg=msg)


@each_message_type
@given(data=st.data())
def test_codec_reads_what_the_reference_writes(codec, writer, tag, data):
    msg = draw_message(data, tag, codec)
    decoded = codec.decode(reference_frames(writer, msg), type(msg))
    check_equivalent(msg, decoded, codec=codec.name, what=f"the codec reads {writer!r} bytes differently", msg=msg)


def _decode(reference, frames, msg_type):
    """The engine reference's decode, told the type when the engine's frames do not say it."""
    return reference.decode(frames, msg_type) if ENGINE.typed_frames else reference.decode(frames)
