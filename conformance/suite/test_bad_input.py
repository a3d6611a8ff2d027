"""Property 6: damaged frames decode to a valid message or raise the codec's declared decode error.

Never another exception type: a receiver that dies on one bad frame takes the
engine down with it. Codecs that execute code while decoding (pickle) are
skipped: feeding them damaged frames would run arbitrary code, which is the
reason for the migration.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.mutations import mutate
from conformance.properties import PropertyFailure, each_message_type, frames_bytes, message_strategy, summarise
from reference_codec.schema import MESSAGE_TYPES

_MESSAGE_CLASSES = tuple(MESSAGE_TYPES.values())


@pytest.fixture(autouse=True)
def _not_for_code_executing_codecs(codec):
    if codec.caps.executes_code_on_decode:
        pytest.skip(f"{codec.name} executes code while decoding; damaged input is unsafe to feed it")


def _check_outcome(codec, frames, msg, damaged):
    try:
        decoded = codec.decode(damaged)
    except codec.caps.decode_error:
        return
    except Exception as exc:
        raise PropertyFailure(
            f"[{codec.name}] damaged frames raised {type(exc).__name__}: {exc} "
            f"(declared decode error: {codec.caps.decode_error})\n  original message: {summarise(msg)}"
        ) from None  # a RecursionError traceback is thousands of frames; the message says enough
    if not isinstance(decoded, _MESSAGE_CLASSES):
        raise PropertyFailure(
            f"[{codec.name}] damaged frames decoded to {type(decoded).__name__}, not a message\n"
            f"  original message: {summarise(msg)}"
        )


@each_message_type
@given(data=st.data())
def test_damaged_frames_give_a_message_or_the_declared_decode_error(codec, tag, data):
    msg = data.draw(message_strategy(tag, codec), label="message")
    frames = frames_bytes(codec.encode(msg))
    damaged = mutate(frames, data)
    _check_outcome(codec, frames, msg, damaged)


@given(junk=st.lists(st.binary(max_size=64), min_size=0, max_size=3))
def test_arbitrary_bytes_give_a_message_or_the_declared_decode_error(codec, junk):
    _check_outcome(codec, junk, None, junk)
