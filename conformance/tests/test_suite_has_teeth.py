"""Meta-tests: every property module fails a codec with the bug it exists for, and each meta-test depends on that check.

Each row of :data:`TEETH` names a selection of one property module only (no
golden vectors, no other property), a broken codec from ``broken_codecs.py``
and the evidence its failure must show. Three things are proved per row:

* the suite, run as a user runs it (``python -m conformance``, without ``-x``),
  fails the broken codec with that evidence;
* with the row's check switched off (:mod:`conformance.tests.weakenings`),
  the same run passes: the failure came from that check, so weakening the
  check makes this meta-test fail;
* the reference passes every selection (one run for all rows).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class Tooth:
    name: str
    selection: str  # a -k expression naming one property module
    broken: str  # a class of broken_codecs.py
    evidence: str  # text the failure must show (a path, a reason)
    weakening: str  # the check that catches it (weakenings.WEAKENINGS)


LOGPROB_TYPES = "(BatchTokenIDOutput or BatchStrOutput)"
UNTYPED_TYPES = "(GetInternalStateReqOutput or DumperControlReqOutput or LoadLoRAAdapterFromTensorsReqInput)"

TEETH = [
    Tooth("roundtrip", f"test_roundtrip.py and {LOGPROB_TYPES}", "NoneLogprobAsZero", "$.input_token_logprobs_val", "equivalence"),
    Tooth("pickle-agreement", f"test_pickle_agreement.py and {UNTYPED_TYPES}", "NumpyScalarAsFloat", "instead of np.", "equivalence"),
    Tooth("producer-consumer", "test_producer_consumer.py and (FlushCacheReqInput or BatchTokenIDOutput)", "NegatedFloatsOnTheWire", "the reference reads the codec's bytes differently: float bits differ", "equivalence"),
    Tooth("reencode", "test_reencode.py and (FlushCacheReqInput or AbortReq)", "NondeterministicEncoding", "encoding the same message twice gave different bytes", "reencode-bytes"),
    Tooth("schema-evolution", "test_schema_evolution.py and (older or newer) and (FlushCacheReqInput or AbortReq)", "StrictFieldCount", "is refused", "schema-evolution"),
    Tooth("nested-schema-evolution", "test_schema_evolution.py and nested and older and (TokenizedGenerateReqInput or TokenizedEmbeddingReqInput)", "NestedTailRequired", "an old sender's nested structs (trailing fields missing) is refused", "schema-evolution"),
    Tooth("schema-diff", "test_schema_evolution.py and test_codec_schema and FlushCacheReqInput", "FieldInsertedInTheMiddle", "schema of FlushCacheReqInput breaks positional decoding", "schema-diff"),
    Tooth("nested-schema-diff", "test_schema_evolution.py and test_codec_schema and TokenizedGenerateReqInput and not Batch", "NestedFieldInserted", "TokenizedGenerateReqInput.sampling_params -> SamplingParams: field inserted", "schema-diff"),
    Tooth("bad-input", "test_bad_input.py and (test_arbitrary_bytes or (test_damaged and FlushCacheReqInput))", "CrashesOnJunk", "other-exception IndexError", "decoder-contract"),
    Tooth("frame-count", "test_bad_input.py and frame_list", "AcceptsExtraFrames", "decoded instead of rejected", "frame-count"),
    Tooth("pickle-payloads", "test_bad_input.py and pickle_payloads", "UnpicklesBinValues", "a pickle payload ran while decoding", "decoder-contract"),
    Tooth("transport", "test_transport.py and interleaved", "DecodesOnlyBytes", "cannot be decoded as received", "transport-decode"),
    Tooth("golden-vectors", "test_golden_vectors.py and n_pickled", "UnpicklesOpaqueFields", "n_pickled", "golden-rejection"),
    Tooth("devices", "test_devices.py", "DeviceDroppedSilently", "a device this receiver lacks, were decoded onto cpu without a declared map_location", "device-refusal"),
]

#: Bug classes of the migration, each caught by the round-trip property alone.
BUG_CLASSES = [
    ("TupleAsList", "type differs: list instead of tuple"),
    ("Float64AsFloat32", "float bits differ"),
    ("BoolAsInt", "type differs: int instead of bool"),
    ("NegativeZeroLost", "float bits differ"),
    ("NumpyScalarAsFloat", "instead of np."),
    ("TailFieldReset", "differs"),
    ("EnumAsValue", "instead of"),
]
ROUNDTRIP = "test_roundtrip.py and (BatchTokenIDOutput or TokenizedGenerateReqInput or ProfileReq or BatchEmbeddingOutput or GetInternalStateReqOutput)"


def run_suite(codec: str, selection: str, weakening: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci", PYTHONHASHSEED="0")
    env.pop("IPC_CONFORMANCE_FAILURE_LIST", None)
    if weakening:
        env["IPC_META_WEAKEN"] = weakening
    return subprocess.run(
        [sys.executable, "-m", "conformance", "--codec", codec, "-q", "-p", "no:xdist", "-p", "conformance.tests.weakenings", "-k", selection],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )


def verdict(result: subprocess.CompletedProcess) -> str:
    return result.stdout.rstrip().splitlines()[-1] if result.stdout.strip() else result.stderr[-500:]


def test_reference_passes_every_selection_used_below():
    selection = " or ".join(f"({t.selection})" for t in TEETH) + f" or ({ROUNDTRIP})"
    result = run_suite("reference", selection)
    assert result.returncode == 0 and verdict(result).startswith("CONFORMANCE SUITE PASSED"), result.stdout[-3000:]


@pytest.mark.parametrize("tooth", TEETH, ids=[t.name for t in TEETH])
def test_each_property_module_fails_the_codec_with_its_bug(tooth: Tooth):
    result = run_suite(f"conformance.tests.broken_codecs:{tooth.broken}", tooth.selection)
    assert result.returncode == 1 and verdict(result).startswith("CONFORMANCE SUITE FAILED"), result.stdout[-3000:]
    assert tooth.evidence in result.stdout, result.stdout[-3000:]


@pytest.mark.parametrize("tooth", TEETH, ids=[t.name for t in TEETH])
def test_each_meta_test_fails_when_its_check_is_switched_off(tooth: Tooth):
    """The sensitivity of the test above: with the row's check weakened, the broken codec passes."""
    result = run_suite(f"conformance.tests.broken_codecs:{tooth.broken}", tooth.selection, weakening=tooth.weakening)
    assert result.returncode == 0 and verdict(result).startswith("CONFORMANCE SUITE PASSED"), (
        f"with {tooth.weakening!r} switched off the suite still fails {tooth.broken}: the meta-test does not depend on that check\n"
        + result.stdout[-3000:]
    )


@pytest.mark.parametrize("broken, evidence", BUG_CLASSES, ids=[b for b, _ in BUG_CLASSES])
def test_the_round_trip_property_alone_fails_each_bug_class(broken, evidence):
    result = run_suite(f"conformance.tests.broken_codecs:{broken}", ROUNDTRIP)
    assert result.returncode == 1, f"the round-trip property passed {broken}:\n{result.stdout[-2000:]}"
    assert evidence in result.stdout, result.stdout[-3000:]


def test_a_codec_that_declares_its_device_mapping_passes_the_device_property():
    """The same placement as ``DeviceDroppedSilently``, declared (``map_location = "cpu"``): conforming, with the tensors checked on the CPU."""
    result = run_suite("conformance.tests.broken_codecs:DeviceMappedToCPU", "test_devices.py")
    assert result.returncode == 0 and verdict(result).startswith("CONFORMANCE SUITE PASSED"), result.stdout[-3000:]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: on a CPU-only machine every tensor is already on the CPU")
def test_suite_fails_a_codec_that_drops_the_tensor_device():
    result = run_suite("conformance.tests.broken_codecs:TensorDeviceDropped", "test_roundtrip.py and (TokenizedGenerateReqInput or BatchTokenIDOutput)")
    assert result.returncode == 1 and "tensor device differs" in result.stdout, result.stdout[-3000:]
