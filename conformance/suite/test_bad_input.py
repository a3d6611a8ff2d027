"""Property 6: hostile frames decode to a valid message or raise the codec's declared decode error.

Never another exception type (a receiver that dies on one bad frame takes the
engine down with it), never a hang, never unbounded memory, never code
execution. The attacks are those of :mod:`conformance.fuzz.attacks` (lying
counts and lengths, foreign ext codes, hostile dtype/device/shape metadata,
deep nesting, pickle payloads, out-of-band frame damage) plus blind byte
damage; the seeded long run of the same contract is ``python -m conformance.fuzz``.

Codecs that execute code while decoding (pickle) are skipped: feeding them
damaged frames would run arbitrary code, which is the reason for the migration.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.fuzz.attacks import ATTACKS, Seed, attack, hostile_values
from conformance.fuzz.bytes_mutations import mutate_bytes
from conformance.fuzz.choices import HypothesisChoices
from conformance.fuzz.harness import Harness
from conformance.fuzz.pickle_probe import PickleProbe
from conformance.properties import MESSAGE_TAGS, PropertyFailure, each_message_type, frames_bytes, message_strategy, summarise

#: Generous: CI machines are shared; a decoder that needs this long for one small frame is broken anyway.
TIME_BOUND_S = 10.0
MEMORY_BOUND = 256 << 20

# Attacks are drawn over all message types at once, so each gets a larger budget than a per-type property.
_ATTACK_SETTINGS = settings(max_examples=settings.default.max_examples * 6)


@pytest.fixture(autouse=True)
def _not_for_code_executing_codecs(codec):
    if codec.caps.executes_code_on_decode:
        pytest.skip(f"{codec.name} executes code while decoding; damaged input is unsafe to feed it")


@pytest.fixture(scope="module")
def probe():
    return PickleProbe()


@pytest.fixture(scope="module")
def harness(codec, probe):
    return Harness(codec, probe, time_bound=TIME_BOUND_S, memory_bound=MEMORY_BOUND)


def _check(harness, frames, msg, how: str) -> None:
    outcome = harness.run(frames)
    if outcome.is_finding:
        shown = [bytes(f)[:96].hex() + ("..." if len(f) > 96 else "") for f in frames]
        raise PropertyFailure(
            f"[{harness.codec.name}] {how}: {outcome.describe()}\n"
            f"  declared decode error: {harness.codec.caps.decode_error}\n"
            f"  frames (hex): {shown}\n  original message: {summarise(msg)}"
        )


@each_message_type
@given(data=st.data())
def test_damaged_frames_give_a_message_or_the_declared_decode_error(codec, harness, tag, data):
    msg = data.draw(message_strategy(tag, codec), label="message")
    frames = frames_bytes(codec.encode(msg))
    damaged = mutate_bytes(frames, HypothesisChoices(data))
    _check(harness, damaged, msg, "byte damage")


@pytest.mark.parametrize("name", sorted(ATTACKS))
@_ATTACK_SETTINGS
@given(data=st.data())
def test_hostile_frames_keep_the_decoder_contract(codec, harness, probe, name, data):
    tag = data.draw(st.sampled_from(MESSAGE_TAGS), label="message type")
    msg = data.draw(message_strategy(tag, codec), label="message")
    seed = Seed.of(codec.encode(msg), tag)
    damaged = attack(seed, HypothesisChoices(data), probe, name)
    _check(harness, damaged, msg, f"attack {name}")


@_ATTACK_SETTINGS
@given(data=st.data())
def test_pickle_payloads_never_run_wherever_they_are_placed(codec, harness, probe, data):
    tag = data.draw(st.sampled_from(MESSAGE_TAGS), label="message type")
    msg = data.draw(message_strategy(tag, codec), label="message")
    seed = Seed.of(codec.encode(msg), tag)
    pickles = [v for v in hostile_values(probe) if any(p in v for p in probe.payloads())]
    payload = data.draw(st.sampled_from(pickles), label="pickle payload (encoded)")
    places = [s for s in seed.spans if s.depth >= 1] or [None]
    span = data.draw(st.sampled_from(places), label="replaced value")
    body = seed.frames[0]
    frames = [payload] if span is None else [body[: span.start] + payload + body[span.end :]] + seed.frames[1:]
    outcome = harness.run(frames)
    if outcome.kind == "code-executed":
        raise PropertyFailure(f"[{codec.name}] a pickle payload ran while decoding (a file was created)\n  frames: {[f[:96].hex() for f in frames]}")
    _check(harness, frames, msg, "pickle payload")


@given(junk=st.lists(st.binary(max_size=64), min_size=0, max_size=3))
def test_arbitrary_bytes_give_a_message_or_the_declared_decode_error(codec, harness, junk):
    _check(harness, junk, None, "arbitrary bytes")
