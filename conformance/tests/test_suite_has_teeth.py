"""Meta-tests: the suite fails every deliberately broken codec and passes the reference.

Each broken codec (``broken_codecs.py``) reproduces one bug class from the
migration. The suite runs as a user runs it (``python -m conformance``) on a
selection that covers the bug; the run must fail and name the bug's path.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

SELECTION = "golden or (test_decode_of_encode and (BatchTokenIDOutput or TokenizedGenerateReqInput or ProfileReq or BatchEmbeddingOutput))"
BAD_INPUT = "test_arbitrary_bytes or (test_damaged and FlushCacheReqInput)"


def run_suite(codec: str, selection: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci", PYTHONHASHSEED="0")
    env.pop("IPC_CONFORMANCE_FAILURE_LIST", None)
    return subprocess.run(
        # -x: one failure is the evidence; without it every failing property
        # would be shrunk in turn, minutes per broken codec.
        [sys.executable, "-m", "conformance", "--codec", codec, "-q", "-x", "-p", "no:xdist", "-k", selection],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_reference_passes_the_selections_used_below():
    for selection in (SELECTION, BAD_INPUT):
        result = run_suite("reference", selection)
        assert result.returncode == 0, result.stdout[-3000:]
        assert "CONFORMANCE SUITE PASSED" in result.stdout.splitlines()[-2] + result.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    "broken, evidence",
    [
        ("TupleAsList", "type differs: list instead of tuple"),
        ("NoneLogprobAsZero", "_logprobs_val"),
        ("Float64AsFloat32", "float bits differ"),
        ("BoolAsInt", "type differs: int instead of bool"),
        ("NegativeZeroLost", "float bits differ"),
        ("NumpyScalarAsFloat", "instead of"),
        ("TailFieldReset", "differs"),
        ("EnumAsValue", "instead of"),
        ("UnpicklesOpaqueFields", "n_pickled"),
    ],
)
def test_suite_fails_a_codec_with_a_known_bug(broken, evidence):
    result = run_suite(f"conformance.tests.broken_codecs:{broken}", SELECTION)
    assert result.returncode != 0, f"the suite passed {broken}:\n{result.stdout[-2000:]}"
    assert "CONFORMANCE SUITE FAILED" in result.stdout
    assert evidence in result.stdout, result.stdout[-3000:]


def test_suite_fails_a_codec_whose_decoder_crashes_on_junk():
    result = run_suite("conformance.tests.broken_codecs:CrashesOnJunk", BAD_INPUT)
    assert result.returncode != 0 and "other-exception IndexError" in result.stdout, result.stdout[-3000:]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: on a CPU-only machine every tensor is already on the CPU")
def test_suite_fails_a_codec_that_drops_the_tensor_device():
    result = run_suite("conformance.tests.broken_codecs:TensorDeviceDropped", "test_decode_of_encode and (TokenizedGenerateReqInput or BatchTokenIDOutput)")
    assert result.returncode != 0 and "device" in result.stdout, result.stdout[-3000:]
