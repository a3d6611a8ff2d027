"""Engines: selection, the typed plug-in door, a third engine in one module, and vLLM's profile where vLLM is installed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import msgspec
import pytest

from conformance.engines import ENGINES, Engine, EngineSelectionError, load_engine
from conformance.plugin import CodecSelectionError, CodecUnderTest, _capabilities, load_codec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THIRD_ENGINE = os.path.join(ROOT, "examples", "third-engine")
HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_the_default_engine_is_the_reference_schema_with_the_reference_and_pickle_codecs():
    from conformance.engines.reference import CODECS
    from reference_codec.schema import MESSAGE_TYPES

    engine = load_engine()
    assert engine.name == "reference" and dict(engine.types) == dict(MESSAGE_TYPES)
    assert engine.codecs is CODECS and not engine.typed_frames and engine.reference_schema
    assert set(CODECS) == {"reference", "reference-v2", "pickle", "pickle-oob"}


def test_a_codec_named_after_an_engine_selects_that_engine(monkeypatch):
    from conformance.engines import engine_spec_from_environment
    from conformance.engines.profile import CODEC_ENV, ENGINE_ENV

    monkeypatch.delenv(ENGINE_ENV, raising=False)
    for codec, engine in (("sglang", "sglang"), ("vllm", "vllm"), ("reference", "reference"), ("pickle", "reference")):
        monkeypatch.setenv(CODEC_ENV, codec)
        assert engine_spec_from_environment() == engine, codec
    monkeypatch.setenv(ENGINE_ENV, "vllm")
    assert engine_spec_from_environment() == "vllm"  # an engine named wins
    from conformance.engines import engine_named_by

    assert engine_named_by("sglang") == "sglang" and engine_named_by(" vllm ") == "vllm"
    assert engine_named_by("reference") == "reference" and engine_named_by("mypkg.codec:Codec") is None and engine_named_by(None) is None


def test_an_unknown_engine_is_refused_naming_the_choices():
    with pytest.raises(EngineSelectionError, match=r"unknown engine 'nope'.*sglang.*vllm"):
        load_engine("nope")
    with pytest.raises(EngineSelectionError, match=r"not a conformance.engines.Engine"):
        load_engine("conformance.engines.profile:ENGINES")
    with pytest.raises(EngineSelectionError, match=r"cannot import 'no_such_module'"):
        load_engine("no_such_module:ENGINE")
    assert set(ENGINES) >= {"sglang", "vllm"}


class _Msg(msgspec.Struct):
    x: int


class _UntypedCodec:
    def encode(self, msg):
        return [msgspec.msgpack.encode(msg)]

    def decode(self, frames):
        return msgspec.msgpack.decode(frames[0], type=_Msg)


class _TypedCodec(_UntypedCodec):
    typed_decode = True

    def decode(self, frames, msg_type):
        return msgspec.msgpack.decode(frames[0], type=msg_type)


def _typed_engine() -> Engine:
    return Engine(
        name="typed",
        description="frames without a tag",
        message_types=lambda: {"_Msg": _Msg},
        message_strategy=lambda cls: None,
        codecs={"untyped": _UntypedCodec, "typed": _TypedCodec},
        pickle_baseline=_UntypedCodec,
        typed_frames=True,
    )


def test_a_typed_engine_refuses_a_codec_that_cannot_be_told_the_type():
    engine = _typed_engine()
    with pytest.raises(CodecSelectionError, match=r"decode\(frames, type\).*typed_decode = True"):
        load_codec("untyped", engine)
    assert load_codec("typed", engine).caps.typed_decode


def test_the_message_type_reaches_only_a_codec_that_declares_typed_decode():
    frames = [msgspec.msgpack.encode(_Msg(3))]
    typed, untyped = _TypedCodec(), _UntypedCodec()
    assert CodecUnderTest(typed, _capabilities(typed, "t")).decode(frames, _Msg) == _Msg(3)
    # An untyped codec is called as before: decode(frames), one argument.
    assert CodecUnderTest(untyped, _capabilities(untyped, "u")).decode(frames, _Msg) == _Msg(3)


def _suite(*args: str, extra_path: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra_path, ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("IPC_CONFORMANCE_ENGINE", None)
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args, "-p", "no:xdist", "-q"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900
    )


def test_a_third_engine_is_one_module_and_the_whole_suite_passes_its_codec():
    result = _suite("--engine", "gateway_engine:ENGINE", "--codec", "msgspec", extra_path=THIRD_ENGINE)
    last = result.stdout.rstrip().splitlines()[-1]
    assert result.returncode == 0 and last.startswith("CONFORMANCE SUITE PASSED"), result.stdout[-3000:]
    successes = int(re.search(r"PASSED: (\d+) successes", last).group(1))
    assert successes >= 2 * 8, last  # every per-type property ran for both message types


def test_a_third_engine_s_broken_codec_fails_with_the_property_and_path():
    """The same engine with a codec that drops logprobs: the suite says which property and where."""
    result = _suite(
        "--engine", "gateway_engine:ENGINE", "--codec", "gateway_engine_broken:DropsLogprobs", "-k", "test_roundtrip",
        extra_path=os.pathsep.join([THIRD_ENGINE, os.path.join(ROOT, "conformance", "tests", "engine_fixtures")]),
    )
    assert result.returncode == 1, result.stdout[-3000:]
    assert "decode(encode(m)) differs from m" in result.stdout and "$.logprobs" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("CONFORMANCE SUITE FAILED")


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (tox -e vllm installs it)")
def test_vllm_messages_are_drawn_valid_for_every_type_and_round_trip_through_vllm_codec():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from conformance.engines.vllm.codec import VllmCodec

    engine = load_engine("vllm")
    assert {"EngineCoreRequest", "EngineCoreOutputs", "UtilityOutput"} <= set(engine.types)
    codec = VllmCodec()

    @settings(max_examples=10, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def draws(data):
        for cls in engine.types.values():
            msg = data.draw(engine.message_strategy(cls))
            assert type(msg) is cls

    draws()
    from vllm.v1.engine import EngineCoreEvent, EngineCoreEventType

    event = EngineCoreEvent(EngineCoreEventType.QUEUED, 1.5)
    assert codec.decode(codec.encode(event), EngineCoreEvent) == event


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed (tox -e vllm installs it)")
def test_vllm_validated_classes_are_drawn_within_their_ranges_so_almost_no_draw_is_refused():
    """SamplingParams and the other classes whose __post_init__ validates: 50 draws each, at most 5 refused."""
    from hypothesis import given, settings

    from conformance.engines.vllm import strategies as profile

    load_engine("vllm")
    refused = {}
    for cls, strategy in profile._type_overrides().items():
        seen = {"drawn": 0}

        @settings(max_examples=50, database=None, deadline=None, derandomize=True)
        @given(strategy)
        def draw(value):
            seen["drawn"] += 1

        draw()
        refused[cls.__name__] = profile.REFUSED.pop(cls, 0)
    assert max(refused.values()) <= 5, sorted(refused.items())


def test_a_shared_side_channel_passes_when_a_pull_cannot_read_as_a_heartbeat_and_fails_when_it_can():
    path = os.pathsep.join([THIRD_ENGINE, os.path.join(ROOT, "conformance", "tests", "engine_fixtures")])
    good = _suite("--engine", "side_channel_engine:ENGINE", "--codec", "msgspec", "-k", "shared_socket", extra_path=path)
    assert good.returncode == 0 and "1 successes" in good.stdout.rstrip().splitlines()[-1], good.stdout[-3000:]
    bad = _suite("--engine", "side_channel_engine:CLASHING_ENGINE", "--codec", "msgspec", "-k", "shared_socket", extra_path=path)
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "on the side channel, a ClashingPull is read as a LeaseHeartbeat that is not empty" in bad.stdout
    assert "$.lease_transfer_ids" in bad.stdout
    # pickle's frames name their class, so they never share the engine's untagged socket: skipped, not a false alarm
    own_wire = _suite("--engine", "side_channel_engine:CLASHING_ENGINE", "--codec", "pickle", "-k", "shared_socket", extra_path=path)
    assert own_wire.returncode == 0 and "does not declare wire compatibility; only the engine's wire" in own_wire.stdout, own_wire.stdout[-3000:]
