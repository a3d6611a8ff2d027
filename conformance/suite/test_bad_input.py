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

from conformance.failures import NO_MESSAGE, summarise
from conformance.findings import Finding
from conformance.fuzz.attacks import ATTACKS, Seed, attack, hostile_values
from conformance.fuzz.bytes_mutations import mutate_bytes
from conformance.fuzz.choices import HypothesisChoices
from conformance.fuzz.harness import Harness
from conformance.fuzz.pickle_probe import PickleProbe
from conformance.properties import MESSAGE_TAGS, MESSAGE_TYPES, PropertyFailure, draw_message, each_message_type, frames_bytes

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
    return Harness(codec, probe, time_bound=TIME_BOUND_S, memory_bound=MEMORY_BOUND, message_types=MESSAGE_TYPES.values())


def _frames_text(frames) -> str:
    return str([bytes(f)[:96].hex() + ("..." if len(f) > 96 else "") for f in frames])


def _check(harness, frames, msg, how: str, msg_type=None) -> None:
    outcome = harness.run(frames, msg_type if msg_type is not None else _type_of(msg))
    if outcome.is_finding:
        found = outcome.kind + (f" {outcome.error_type}" if outcome.error_type else "") + (f": {outcome.error}" if outcome.error else "")
        raise PropertyFailure(
            codec=harness.codec.name,
            what=f"{how}: {found}",
            message=msg if msg is not None else NO_MESSAGE,
            details=[
                f"took {outcome.seconds * 1e3:.1f} ms, peak memory +{outcome.peak_bytes / 2**20:.1f} MiB",
                f"frames (hex): {_frames_text(frames)}",
                "(the message is the valid one the frames were made from)",
            ],
            signature=f"{how}: {outcome.signature}",
            finding=_finding(outcome),
        )


def _finding(outcome) -> Finding:
    """The harness's outcome as a finding: an escaping exception is ``raises`` its class, the rest keep the harness's kind."""
    if outcome.kind == "other-exception":
        return Finding.of("raises", outcome.error_type, outcome.error)
    if outcome.kind == "hang":
        return Finding.of("slow", outcome.error_type, outcome.error)
    if outcome.kind == "crash":
        return Finding.of("raises", "crash", outcome.error)
    return Finding.of(outcome.kind, outcome.error_type, outcome.error)


@each_message_type
@given(data=st.data())
def test_damaged_frames_give_a_message_or_the_declared_decode_error(codec, harness, tag, data):
    msg = draw_message(data, tag, codec)
    frames = frames_bytes(codec.encode(msg))
    damaged = mutate_bytes(frames, HypothesisChoices(data))
    _check(harness, damaged, msg, "byte damage")


def _type_of(msg):
    """The type a receiver expects the frames made from ``msg`` to be (its socket's type); None without a message."""
    return None if msg is None else type(msg)


@pytest.mark.parametrize("name", sorted(ATTACKS))
@_ATTACK_SETTINGS
@given(data=st.data())
def test_hostile_frames_keep_the_decoder_contract(codec, harness, probe, name, data):
    tag = data.draw(st.sampled_from(MESSAGE_TAGS), label="message type")
    msg = draw_message(data, tag, codec)
    seed = Seed.of(codec.encode(msg), tag)
    damaged = attack(seed, HypothesisChoices(data), probe, name)
    _check(harness, damaged, msg, f"attack {name}")


@_ATTACK_SETTINGS
@given(data=st.data())
def test_pickle_payloads_never_run_wherever_they_are_placed(codec, harness, probe, data):
    tag = data.draw(st.sampled_from(MESSAGE_TAGS), label="message type")
    msg = draw_message(data, tag, codec)
    seed = Seed.of(codec.encode(msg), tag)
    pickles = [v for v in hostile_values(probe) if any(p in v for p in probe.payloads())]
    payload = data.draw(st.sampled_from(pickles), label="pickle payload (encoded)")
    places = [s for s in seed.spans if s.depth >= 1] or [None]
    span = data.draw(st.sampled_from(places), label="replaced value")
    body = seed.frames[0]
    frames = [payload] if span is None else [body[: span.start] + payload + body[span.end :]] + seed.frames[1:]
    outcome = harness.run(frames, type(msg))
    if outcome.kind == "code-executed":
        raise PropertyFailure(
            codec=codec.name,
            what="a pickle payload ran while decoding (the probe's file was created)",
            message=msg,
            finding=Finding.of("code-executed", "", "a pickle payload ran"),
            details=[f"frames (hex): {_frames_text(frames)}"],
        )
    _check(harness, frames, msg, "pickle payload")


#: How a frame list can have the wrong length for the message in it.
FRAME_COUNT_FAULTS = ("no frames", "an extra empty frame", "an extra frame of junk", "an extra copy of the body")


@pytest.mark.parametrize("fault", FRAME_COUNT_FAULTS, ids=lambda fault: fault.replace(" ", "-"))
@given(data=st.data())
def test_a_frame_list_of_the_wrong_length_is_rejected(codec, fault, data):
    """Every frame of a message is used, and a message has at least one: anything else is a framing bug.

    A receiver handed a frame list one short or one long (a multipart
    message split or merged wrongly, a stray frame from another sender) must
    say so with its decode error, not decode it: an ignored extra frame is
    data silently lost. One-frame codecs are held to this too.
    """
    tag = data.draw(st.sampled_from(MESSAGE_TAGS), label="message type")
    msg = draw_message(data, tag, codec)
    frames = frames_bytes(codec.encode(msg))
    damaged = {
        "no frames": [],
        "an extra empty frame": frames + [b""],
        "an extra frame of junk": frames + [data.draw(st.binary(min_size=1, max_size=32), label="junk frame")],
        "an extra copy of the body": frames + [frames[0]],
    }[fault]
    _must_reject(codec, damaged, fault, msg)


def _must_reject(codec, frames, fault: str, msg) -> None:
    """The frame-count property's check: ``frames`` raise the declared decode error."""
    try:
        decoded = codec.decode(frames, type(msg))
    except codec.caps.decode_error:
        return
    except Exception as exc:
        raise PropertyFailure(
            codec=codec.name,
            what=f"{fault}: raised {type(exc).__qualname__}, not the declared decode error",
            message=msg,
            finding=Finding.of("raises", type(exc).__qualname__, str(exc)),
            details=[f"{type(exc).__qualname__}: {str(exc)[:200]}", f"frames (hex): {_frames_text(frames)}"],
        ) from None
    raise PropertyFailure(
        codec=codec.name,
        what=f"{fault}: decoded instead of rejected",
        message=msg,
        finding=Finding.of("accepts", type(decoded).__qualname__, fault),
        details=[f"decoded to {summarise(decoded)}", f"frames (hex): {_frames_text(frames)}"],
    )


@given(junk=st.lists(st.binary(max_size=64), min_size=0, max_size=3), tag=st.sampled_from(MESSAGE_TAGS))
def test_arbitrary_bytes_give_a_message_or_the_declared_decode_error(codec, harness, junk, tag):
    """``tag``: the type the receiving socket expects, for engines whose frames do not say theirs."""
    _check(harness, junk, None, "arbitrary bytes", MESSAGE_TYPES[tag] if codec.caps.typed_decode else None)
