"""vLLM's message families: each one is found in vLLM's own modules, runs through the whole suite, and a break in any of them is caught.

Skipped without vLLM 0.34.0 and the packages its connector modules import
(``tox -e vllm`` installs both).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "conformance", "tests", "engine_fixtures")
VLLM_LIST = os.path.join(ROOT, "conformance", "engines", "vllm", "failure_lists", "vllm-0.34.0.txt")

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (tox -e vllm installs it)")

FAMILIES = {
    "engine-core": {"EngineCoreRequest", "EngineCoreOutputs", "UtilityOutput"},
    "handshake": {"EngineCoreReadyResponse", "EngineHandshakeMetadata"},
    "dp-coordinator": {"CoordinatorStats", "StartDpWave", "ScaleElasticEp"},
    "kv-events": {"KVEventBatch"},
    "fault-tolerance": {"FaultToleranceRequest", "FaultToleranceResult"},
    "kv-hints": {"KvHintAction", "KvHintsEnvelope"},
    "ec-transfer": {"XferReq", "XferAck"},
    "mooncake": {"MooncakeXferMetadata", "MooncakeXferResponse", "MooncakeLeaseHeartbeat"},
    "moriio": {"MoRIIOAgentMetadata"},
    "nixl": {"NixlAgentMetadata", "NixlHandshakePayload"},
}


def test_every_vllm_family_resolves_from_vllm_s_own_modules_and_is_in_the_engine_s_types():
    from conformance.engines import load_engine
    from conformance.engines.vllm.families import FAMILIES as DECLARED

    engine = load_engine("vllm")
    assert [f.name for f in DECLARED] == list(FAMILIES)
    for family in DECLARED:
        roots = family.roots()
        assert FAMILIES[family.name] <= set(roots), (family.name, sorted(roots))
        assert set(roots) <= set(engine.types), family.name
        if family.name != "dp-coordinator":  # plain tuples in vLLM: declared in conformance.engines.vllm.coordinator
            assert all(cls.__module__.startswith("vllm.") for cls in roots.values()), family.name


def test_each_family_round_trips_through_vllm_s_own_codec_for_it():
    """The adapter sends a Mooncake message as the connector does (plain msgspec, one frame), engine-core ones through MsgpackEncoder."""
    import msgspec
    from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.mooncake_connector import MooncakeLeaseHeartbeat
    from vllm.v1.fault_tolerance.utils import FaultToleranceResult

    from conformance.engines.vllm.codec import VllmCodec
    from conformance.engines.vllm.coordinator import CoordinatorStats

    codec = VllmCodec()
    heartbeat = MooncakeLeaseHeartbeat(lease_transfer_ids=["t1"])
    assert codec.encode(heartbeat) == [msgspec.msgpack.encode(heartbeat)]
    stats = CoordinatorStats([[1, 2]], 3, True)
    assert codec.encode(stats) == [msgspec.msgpack.encode(([[1, 2]], 3, True))]
    assert codec.decode(codec.encode(stats), CoordinatorStats) == stats
    result = FaultToleranceResult("r", True)
    assert codec.decode(codec.encode(result), FaultToleranceResult) == result
    with pytest.raises(msgspec.DecodeError, match="one frame, got 2"):
        codec.decode([msgspec.msgpack.encode(heartbeat)] * 2, MooncakeLeaseHeartbeat)


def _broken_run(tmp_path, codec: str, selection: str):
    """The suite's verdict on a codec of engine_fixtures/vllm_broken.py: the run, and each test's outcome by its id within the file."""
    report = tmp_path / "broken.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (FIXTURES, ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("IPC_CONFORMANCE_ENGINE", None)
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--engine", "vllm", "--codec", f"vllm_broken:{codec}", "-k", selection, "--report", str(report), "-p", "no:xdist", "-q"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )
    assert result.returncode == 1, result.stdout[-3000:]
    return result, {name.split("::")[-1]: test["outcome"] for name, test in json.loads(report.read_text())["tests"].items()}


def test_a_break_in_any_family_is_caught_by_the_round_trip_with_its_type_and_path(tmp_path):
    """vllm_broken.EveryFamilyBroken breaks one thing per message type beyond the engine core; each type's round trip fails, the engine core's pass."""
    sys.path.insert(0, FIXTURES)
    try:
        from vllm_broken import BREAKS
    finally:
        sys.path.remove(FIXTURES)
    result, by_test = _broken_run(tmp_path, "EveryFamilyBroken", "test_decode_of_encode")
    outcomes = {name.rsplit("[", 1)[-1].rstrip("]"): outcome for name, outcome in by_test.items()}
    assert {t for t, o in outcomes.items() if o == "failed"} == set(BREAKS), outcomes
    assert all(outcomes[t] == "passed" for t in FAMILIES["engine-core"])
    # The silent one (a renamed field is skipped): found as a difference, with its path.
    assert "differs from m" in result.stdout and "$.lease_transfer_ids" in result.stdout
    assert "Expected `bool`, got `int` - at `$.success`" in result.stdout


def test_a_port_that_refuses_unknown_keys_fails_the_newer_sender_property_for_every_map_message(tmp_path):
    """A serde port with deny_unknown_fields: every map message from a newer sender is refused, and only that property fails."""
    result, outcomes = _broken_run(tmp_path, "DeniesUnknownKeys", "map_message")
    failed = {name for name, outcome in outcomes.items() if outcome == "failed"}
    newer = {name for name in outcomes if name.startswith("test_map_message_from_a_newer_schema")}
    assert failed == newer and {"test_map_message_from_a_newer_schema_decodes_ignoring_keys_it_does_not_know[MooncakeXferResponse]"} <= failed, outcomes
    assert "is refused" in result.stdout and "unknown field" in result.stdout


def test_a_port_that_does_not_fill_declared_defaults_fails_the_older_sender_property(tmp_path):
    """MooncakeXferMetadata.remote_pp_size defaults to 1: a peer that predates it must be read as 1, not 0 (what the connector's comments assume)."""
    result, outcomes = _broken_run(tmp_path, "DefaultsNotFilled", "map_message")
    assert outcomes["test_map_message_from_an_older_schema_decodes_with_defaults_for_the_keys_it_lacks[MooncakeXferMetadata]"] == "failed", outcomes
    assert outcomes["test_map_message_from_an_older_schema_decodes_with_defaults_for_the_keys_it_lacks[MooncakeLeaseHeartbeat]"] == "passed", outcomes
    assert "$.remote_pp_size" in result.stdout


def test_a_value_lost_on_the_second_hop_fails_the_vllm_gate_despite_its_byte_stability_line(tmp_path):
    """vLLM's list marks re-encoding to other bytes as a 'sometimes' finding (a set's order); a router that loses a field when it
    re-encodes a decoded message must not hide behind it: the second hop's value is compared first, a ``differs`` finding."""
    report = tmp_path / "second-hop.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (FIXTURES, ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("IPC_CONFORMANCE_ENGINE", None)
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--engine", "vllm", "--codec", "vllm_broken:SecondHopLosesLastField", "--failure-list", VLLM_LIST,
         "-k", "test_encoding_is_deterministic", "--report", str(report), "-p", "no:xdist", "-q"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:]
    assert "the second hop sent another value" in result.stdout, result.stdout[-3000:]
    new = json.loads(report.read_text())["failure_list"]["new"]
    assert new and all(n["finding"].startswith("differs") for n in new), new
