"""Cases of the ``engine-core`` family: the messages of ``vllm.v1.engine`` through vLLM's own ``MsgpackEncoder``/``MsgpackDecoder(type)``.

Engine-core structs are ``array_like`` without a tag: the socket's declared
type says what a frame is (``type`` in the file). A tensor or numpy array of
256 bytes or more leaves the body as a frame of its own (vLLM's
``VLLM_MSGPACK_ZERO_COPY_THRESHOLD``), referenced from the body by an ext;
smaller ones stay inline. Their neutral form is ``{"__tensor__": {dtype,
shape, data}}`` (``{"__ndarray__": ...}`` for numpy), and a message holding
one has no ``input`` (a tensor is not a plain value).
"""

from __future__ import annotations

from typing import Any, List

import msgspec

from conformance.vectors.engine_build import Frames, ValueCase, case_registrar

__all__ = ["CASES"]

FAMILY = "engine-core"
CASES: List[ValueCase] = []


_case = case_registrar(FAMILY, CASES)


def _engine():
    import vllm.v1.engine as engine

    return engine


def _output(request_id: str = "req-0", **fields: Any):
    return _engine().EngineCoreOutput(request_id=request_id, new_token_ids=fields.pop("new_token_ids", [1, 2, 3]), **fields)


def _encode(message: Any) -> List[bytes]:
    from vllm.v1.serial_utils import MsgpackEncoder

    return [bytes(memoryview(f).cast("B")) for f in MsgpackEncoder().encode(message)]


def _pooled_output():
    import torch

    # 128 float32 = 512 bytes: over vLLM's 256-byte threshold, so sent as a frame of its own.
    return _engine().EngineCoreOutputs(engine_index=1, outputs=[_output("pool-0", new_token_ids=[], pooling_output=torch.arange(128, dtype=torch.float32) / 4)], timestamp=1.0)


# --- y_ ---------------------------------------------------------------------------------------


@_case("y_outputs_two_requests", "EngineCoreOutputs", "two outputs, one finished with reason STOP and a stop token, and the finished_requests set naming it")
def _():
    engine = _engine()
    return engine.EngineCoreOutputs(
        engine_index=0,
        outputs=[_output("req-0"), _output("req-1", new_token_ids=[2], finish_reason=engine.FinishReason.STOP, stop_reason=151645)],
        timestamp=1700000000.25,
        finished_requests={"req-1"},  # one member: a set's order on the wire follows the process's string hashing
        wave_complete=2,
    )


@_case("y_outputs_pooling_tensor_out_of_band", "EngineCoreOutputs", "a pooling output of 128 float32 (512 bytes): the tensor travels out of band, as frame 1")
def _():
    return _pooled_output()


@_case("y_outputs_small_tensor_inline", "EngineCoreOutputs", "a pooling output of 4 float32 (16 bytes): under the threshold, inline in the body")
def _():
    import torch

    return _engine().EngineCoreOutputs(outputs=[_output("pool-1", new_token_ids=[], pooling_output=torch.tensor([0.5, -1.0, 2.0, 0.0]))], timestamp=2.0)


@_case("y_outputs_empty", "EngineCoreOutputs", "no outputs, every default: the keep-alive an idle engine sends")
def _():
    return _engine().EngineCoreOutputs(outputs=[], timestamp=3.0)  # the default is the monotonic clock


@_case("y_utility_output_failure", "UtilityOutput", "a utility call's failure: call_id and message, no result")
def _():
    return _engine().UtilityOutput(call_id=42, failure_message="RuntimeError: not supported")


@_case("y_request_generate", "EngineCoreRequest", "a generate request: prompt token ids (int64 ndarray), greedy SamplingParams, no LoRA")
def _():
    import numpy as np
    from vllm.sampling_params import SamplingParams

    return _engine().EngineCoreRequest(
        request_id="req-0",
        prompt_token_ids=np.array([1, 15043, 29892], dtype=np.int64),
        mm_features=None,
        sampling_params=SamplingParams(temperature=0.0, max_tokens=8),
        pooling_params=None,
        arrival_time=1700000000.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


# --- n_ ---------------------------------------------------------------------------------------


@_case("n_outputs_truncated", "EngineCoreOutputs", "two outputs' body cut in half", reason="truncated")
def _():
    body = _encode(_engine().EngineCoreOutputs(outputs=[_output("req-0"), _output("req-1")], timestamp=4.0))[0]
    return Frames([body[: len(body) // 2]])


@_case("n_outputs_out_of_band_frame_missing", "EngineCoreOutputs", "the out-of-band pooling output's body without its frame 1", reason="IndexError")
def _():
    return Frames(_encode(_pooled_output())[:1])


@_case("n_output_token_id_str", "EngineCoreOutputs", "a new token id written as the str '1'", reason="Expected `int`, got `str`")
def _():
    return Frames([msgspec.msgpack.encode([0, [["req-0", ["1"]]]])])


@_case("n_utility_output_as_map", "UtilityOutput", "UtilityOutput written as a map of field names: it is array_like", reason="Expected `array`, got `object`")
def _():
    return Frames([msgspec.msgpack.encode({"call_id": 1})])


# --- i_ ---------------------------------------------------------------------------------------


@_case("i_utility_output_extra_trailing_field", "UtilityOutput", "a UtilityOutput with a fourth element: msgspec ignores it (how array_like grows)")
def _():
    return Frames([msgspec.msgpack.encode([7, None, None, "later"])])
