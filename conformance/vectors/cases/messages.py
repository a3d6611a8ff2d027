"""y_ (wire v1): messages as the reference writes them: control messages, detokenizer batches, generate requests."""

from __future__ import annotations

from array import array

import numpy as np
import torch

from reference_codec import schema as s

from ..registry import INT64_MAX, INT64_MIN, UINT64_MAX, case, generate_request, str_output, token_id_output


def _sampling_params() -> s.SamplingParams:
    return s.SamplingParams(
        max_new_tokens=16,
        stop=["</s>", "\n\n"],
        stop_token_ids={2, 128001},
        temperature=0.7,
        top_p=0.9,
        top_k=50,
        repetition_penalty=1.1,
        logit_bias={"42": -100.0},
        sampling_seed=INT64_MAX,
        custom_params={"mode": "greedy", "weights": [1, 2.5, None], "flags": {"a": True}},
        watermark=s.WatermarkRequestConfig(enabled=True, key="k", context_window=4),
    )


@case("y_flush_cache_req_input", "smallest control message: tag, base fields rid/http_worker_ipc, one Optional[float]")
def _():
    return s.FlushCacheReqInput(rid="flush-1", timeout_s=1.5)


@case("y_abort_req", "AbortReq with a finish-reason dict (str and int values) and a positional nested struct list")
def _():
    return s.AbortReq(
        rid="req-7",
        finished_reason={"type": "abort", "message": "client disconnected", "status_code": 499},
        abort_message="client disconnected",
        weight_versions=[s.WeightVersionSpan(version="v1", start=0, end=12)],
    )


@case(
    "y_batch_token_id_output_logprobs",
    "detokenizer batch: logprob rows holding None, an empty row, a None row, [[]] chunks, ragged two-level top-k",
)
def _():
    return token_id_output(
        3,
        http_worker_ipcs=[None, "ipc:///tmp/tokenizer-1", None],
        finished_reasons=[None, {"type": "length", "length": 16}, {"type": "stop", "matched": [128001, 2]}],
        decoded_texts=["", "Hello", " world"],
        decode_ids=[array("q"), array("q", [9906]), array("q", [1917, 0])],
        read_offsets=[0, 1, 2],
        prompt_tokens=[5, 6, 7],
        completion_tokens=[0, 1, 2],
        input_token_logprobs_val=[[None, -0.18, -2.94], [], None],
        input_token_logprobs_idx=[[1, 2, 3], [], None],
        output_token_logprobs_val=[[], [-0.25, -1.5], [None]],
        output_token_logprobs_idx=[[], [9906, 11], [None]],
        output_top_logprobs_val=[[[]], [[-0.1, -2.3], None], None],
        output_top_logprobs_idx=[[[]], [[9906, 13], None], None],
        output_token_ids_logprobs_val=[None, [[-3.5]], []],
        output_token_ids_logprobs_idx=[None, [[42]], []],
        output_token_entropy_val=[0.5, None, 1.25],
        placeholder_tokens_idx=[None, [0], []],
        placeholder_tokens_val=[None, [151655], []],
        retraction_counts=[0, 0, 1],
        dp_ranks=[0, None, 1],
    )


@case(
    "y_batch_token_id_output_buffers",
    "typed buffers in a batch: decode_ids arrays, routed_experts int32 tensors, ndarray sampling masks and flat top-k",
)
def _():
    return token_id_output(
        2,
        decode_ids=[array("q", [1, 2, 3]), array("q", [INT64_MAX])],
        completion_tokens=[3, 1],
        output_token_sampling_mask=[
            s.SamplingMaskChunk(
                lengths=np.array([2, 1], dtype="<i4"),
                token_ids=np.array([5, 9, 11], dtype="<i8"),
                logprobs=np.array([-0.1, -2.5, -0.0], dtype="<f4"),
            ),
            None,
        ],
        routed_experts=[torch.arange(12, dtype=torch.int32).reshape(2, 3, 2), None],
        input_top_logprobs_val_flat=[np.array([-0.5, -1.5], dtype="<f4"), None],
        input_top_logprobs_idx_flat=[np.array([7, 8], dtype="<i8"), None],
        input_top_logprobs_flat_null_prefix=[1, None],
    )


@case("y_batch_str_output", "detokenizer output to the tokenizer: strings, output_ids arrays, customized_info with Any values")
def _():
    return str_output(
        2,
        finished_reasons=[{"type": "stop", "matched": "</s>"}, None],
        output_strs=["Bonjour, le monde", ""],
        output_ids=[array("q", [1, 2, 3]), array("q")],
        prompt_tokens=[4, 4],
        completion_tokens=[3, 0],
        output_token_logprobs_val=[[-0.5, None, -1.0], []],
        output_token_logprobs_idx=[[1, 2, 3], []],
        customized_info={"score": [0.5, None], "labels": ["a", (1, 2)]},
        weight_versions=[[s.WeightVersionSpan(version="default", start=0, end=3)], None],
    )


@case("y_batch_str_output_empty_batch", "a batch of zero requests: every per-request list is empty, not None")
def _():
    return str_output(0)


@case(
    "y_tokenized_generate_req_input",
    "request with SamplingParams (set, dicts, nested struct), input_ids array('q') holding int64 extremes, enum-keyed dict",
)
def _():
    return generate_request(
        sampling_params=_sampling_params(),
        return_logprob=True,
        top_logprobs_num=5,
        token_ids_logprob=[42, 43],
        return_hidden_states="last",
        session_params=s.SessionParams(id="sess", offset=-1, replace=True),
        bootstrap_host="10.0.0.1",
        bootstrap_port=8998,
        bootstrap_room=UINT64_MAX,
        priority=INT64_MIN,
        num_items_assigned={s.Modality.IMAGE: [2, 0], s.Modality.AUDIO: []},
        kv_hints=s.KvHintsEnvelope(
            protocol_version="1",
            message_id="m-1",
            actions=[s.KvHintAction(action_id="a", action_type="pin", action_version="1", payload={"ttl": 30})],
        ),
        sampling_logprobs_mode="support",
    )


@case(
    "y_batch_tokenized_generate_req_input",
    "a batch message holding two tagged request messages as items (messages nested in messages)",
)
def _():
    return s.BatchTokenizedGenerateReqInput(
        rids=["a", "b"],
        batch=[generate_request(rid="a"), generate_request(rid="b", input_ids=array("q"), stream=False)],
    )
