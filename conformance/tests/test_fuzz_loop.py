"""The fuzz loop catches every way a decoder can break the contract, and stays reproducible."""

from __future__ import annotations

import pytest

from conformance.fuzz.harness import Harness
from conformance.fuzz.loop import RunConfig, Target, reproduce, run
from conformance.fuzz.pickle_probe import PickleProbe
from conformance.plugin import load_codec
from reference_codec.schema import MESSAGE_TYPES

BROKEN = "conformance.tests.broken_codecs:"
# Small runs: one worker, short watchdog, few seeds. Enough inputs that a lie_count
# of 2**32-1 (about one input in 60) appears several times.
SMALL = dict(frames=600, workers=1, per_type=1, hang_timeout=4.0, seed=3)


def test_the_reference_decoder_keeps_the_contract_on_every_input():
    result = run(Target(codec="reference-v2"), RunConfig(**{**SMALL, "workers": 2, "frames": 3000}))
    assert result.passed, result.summary()
    assert result.tried == 3000
    assert result.counts["rejected"] > 2000 and result.counts.get("decoded", 0) > 0
    assert set(result.by_attack) == {"bytes", "buffer_metadata", "buffer_prefix", "ext_code", "frame_structure",
                                     "lie_count", "lie_length", "replace_value"}


@pytest.mark.parametrize(
    "spec, kind",
    [
        ("HangsOnHugeCount", "hang"),
        ("DiesOnHugeCount", "crash"),
        ("AllocatesOnHugeCount", "memory"),
        ("UnpicklesBinValues", "code-executed"),
        ("CrashesOnJunk", "other-exception"),
    ],
)
def test_the_loop_reports_each_broken_decoder_and_carries_on(spec, kind, tmp_path, monkeypatch):
    monkeypatch.setenv("IPC_FUZZ_BROKEN_MARKER_DIR", str(tmp_path))  # misbehave once per run (see _FuzzBroken)
    config = RunConfig(**SMALL, memory_bound=128 << 20)
    result = run(Target(codec=BROKEN + spec), config)
    assert not result.passed
    assert result.counts.get(kind, 0) >= 1, result.summary()
    # one bad input costs one finding, not the run: every input was still tried
    assert result.tried == config.frames, result.summary()
    assert f"FINDING {kind}" in result.summary()


def test_an_input_is_reproduced_from_the_seed_and_its_index():
    target = Target(codec=BROKEN + "CrashesOnJunk")
    result = run(target, RunConfig(**SMALL))
    finding = next(f for f in result.findings if f.kind == "other-exception")
    name, frames, outcome = reproduce(target, SMALL["seed"], finding.index, per_type=SMALL["per_type"])
    assert name == finding.attack
    assert outcome.signature == finding.signature


def test_the_probe_payload_really_runs_when_unpickled():
    """The no-code-execution checks are only as good as the probe: it must create its file."""
    import pickle

    probe = PickleProbe()
    for payload in probe.payloads():
        assert not probe.executed()
        pickle.loads(payload).close()
        assert probe.executed()
        probe.reset()


def test_the_harness_counts_a_non_message_result_as_a_finding():
    class ReturnsInts:
        name = "returns-ints"

        def encode(self, msg):
            return [b""]

        def decode(self, frames):
            return 0

    from conformance.plugin import CodecUnderTest, _capabilities

    impl = ReturnsInts()
    codec = CodecUnderTest(impl, _capabilities(impl, "returns-ints"))
    assert Harness(codec, PickleProbe(), message_types=MESSAGE_TYPES.values()).run([b"\x00"]).kind == "not-a-message"
    assert Harness(load_codec("reference"), PickleProbe(), message_types=MESSAGE_TYPES.values()).run([b"\x00"]).kind == "rejected"


def test_the_harness_counts_a_message_its_own_encoder_refuses_as_a_finding():
    """A decoder that accepts what no encoder writes (here: a map keyed by an array, which
    decodes to a tuple key) hands the next hop a message it cannot send."""
    from conformance.plugin import CodecUnderTest, _capabilities
    from reference_codec import ReferenceCodec

    class KeepsTupleKeys(ReferenceCodec):
        def decode(self, frames):
            import msgspec

            from reference_codec.schema import MESSAGE_TYPES

            return msgspec.msgpack.decode(frames[0], type=MESSAGE_TYPES["GetInternalStateReqOutput"])

    frame = bytes.fromhex("94b9476574496e7465726e616c53746174655265714f7574707574c0c081a576616c756581920102c0")
    impl = KeepsTupleKeys()
    outcome = Harness(CodecUnderTest(impl, _capabilities(impl, "keeps-tuple-keys")), PickleProbe(), message_types=MESSAGE_TYPES.values()).run([frame])
    assert outcome.kind == "not-re-encodable" and "dict key of type tuple" in outcome.error, outcome
    rejected = Harness(load_codec("reference"), PickleProbe(), message_types=MESSAGE_TYPES.values()).run([frame])
    assert rejected.kind == "rejected" and "map key of type tuple" in rejected.error, rejected


def test_a_saved_finding_is_shrunk_reproducible_and_fits_a_vector_description(tmp_path):
    from conformance.fuzz.findings import load_findings, shrink_and_save
    from conformance.vectors import DESCRIPTION_LENGTH

    target = Target(codec=BROKEN + "CrashesOnJunk")
    result = run(target, RunConfig(**SMALL))
    finding = next(f for f in result.findings if f.kind == "other-exception")
    codec = load_codec(target.codec)
    saved = shrink_and_save(codec, finding, directory=str(tmp_path), max_tests=300)
    assert saved is not None
    assert load_findings(str(tmp_path)) == [saved]
    shrunk = [bytes.fromhex(f) for f in saved.frames]
    assert sum(map(len, shrunk)) <= sum(len(bytes.fromhex(f)) for f in finding.frames)
    assert Harness(codec, PickleProbe(), message_types=MESSAGE_TYPES.values()).run(shrunk).signature == finding.signature
    # the description becomes a golden vector's: one ASCII line within the vector format's limit
    assert len(saved.description) <= DESCRIPTION_LENGTH[1] and saved.description.isascii() and "\n" not in saved.description


def test_a_finding_description_is_cut_to_one_ascii_line():
    from conformance.fuzz.findings import describe
    from conformance.vectors import DESCRIPTION_LENGTH

    line = describe("impl", "other-exception", "RuntimeError", "shape '[" + "1, " * 200 + "]'\nnot\u00e9 valid",
                    "buffer_metadata", "BatchTokenIDOutput-8")
    assert len(line) == DESCRIPTION_LENGTH[1] and line.endswith("...") and line.isascii() and "\n" not in line
    assert line.startswith("fuzz finding in impl (buffer_metadata on a BatchTokenIDOutput-8, shrunk): other-exception RuntimeError")
    assert describe("impl", "not-a-message", "int", "", "bytes", "X") == "fuzz finding in impl (bytes on a X, shrunk): not-a-message int"
