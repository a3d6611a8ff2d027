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


def test_a_break_in_any_family_is_caught_by_the_round_trip_with_its_type_and_path(tmp_path):
    """vllm_broken.EveryFamilyBroken breaks one thing per message type beyond the engine core; each type's round trip fails, the engine core's pass."""
    sys.path.insert(0, FIXTURES)
    try:
        from vllm_broken import BREAKS
    finally:
        sys.path.remove(FIXTURES)
    report = tmp_path / "broken.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (FIXTURES, ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("IPC_CONFORMANCE_ENGINE", None)
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "--engine", "vllm", "--codec", "vllm_broken:EveryFamilyBroken", "-k", "test_decode_of_encode",
         "--report", str(report), "-p", "no:xdist", "-q"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900,
    )
    assert result.returncode == 1, result.stdout[-3000:]
    outcomes = {name.rsplit("[", 1)[-1].rstrip("]"): test["outcome"] for name, test in json.loads(report.read_text())["tests"].items()}
    assert {t for t, o in outcomes.items() if o == "failed"} == set(BREAKS), outcomes
    assert all(outcomes[t] == "passed" for t in FAMILIES["engine-core"])
    # The silent one (a renamed field is skipped): found as a difference, with its path.
    assert "differs from m" in result.stdout and "$.lease_transfer_ids" in result.stdout
    assert "Expected `bool`, got `int` - at `$.success`" in result.stdout
