"""Generation and embedding traffic: tokenized requests and the scheduler's streamed outputs.

Field order is wire order (positional encoding); the comments of SGLang
0.5.23's ``io_struct.py`` explain each field's meaning. Two fields differ from
SGLang on purpose: ``time_stats`` and ``customized_info`` are a pickled
``PickleWrapper`` there and concrete types here. The reference still accepts a
``PickleWrapper`` in them (for bytes written by SGLang), and refuses to unpickle
it unless the codec opts in.
"""

from __future__ import annotations

from array import array
from typing import Any, Dict, List, Optional, Union

import msgspec
import numpy as np
import torch

from ._base import BaseBatchReq, BaseReq, PickleWrapper
from .common import (
    APIServerReqTimeStats,
    BeamSearchSequence,
    CachedTokensDetails,
    DPControllerReqTimeStats,
    FinishReasonDict,
    KvHintsEnvelope,
    Modality,
    MultimodalProcessorOutput,
    OutputHiddenStates,
    PositionalEmbeds,
    ReturnHiddenStatesMode,
    SamplingLogprobsMode,
    SamplingMaskChunk,
    SamplingParams,
    SchedulerReqTimeStats,
    SessionParams,
    TokenIdsLogprobIndices,
    TokenIdsLogprobValues,
    TokenLogprobIndices,
    TokenLogprobValues,
    TopLogprobIndices,
    TopLogprobValues,
    WeightVersionSpans,
)
from .scalars import Int64, UInt64


class BatchReqTimeStats(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    """Per-request scheduler timings of one output batch.

    A tagged wrapper rather than a bare list: msgspec can only tell a list from
    SGLang's ``PickleWrapper`` (both msgpack arrays) when both are tagged structs.
    """

    items: List[SchedulerReqTimeStats]


class BeamSearchOutput(BaseBatchReq, kw_only=True):
    sequences: List[BeamSearchSequence]


class TokenizedGenerateReqInput(BaseReq, kw_only=True):
    input_text: Optional[Union[str, List[Union[str, List[str]]]]]
    input_ids: Optional[array]
    input_embeds: Optional[List[List[float]]]
    mm_inputs: Optional[MultimodalProcessorOutput]
    token_type_ids: Optional[List[Int64]]
    sampling_params: SamplingParams
    return_logprob: bool
    logprob_start_len: Int64
    top_logprobs_num: Int64
    token_ids_logprob: Optional[List[Int64]]
    stream: bool
    return_sampling_mask: bool = False
    return_flat_raw_top_logprobs: bool = False
    return_hidden_states: ReturnHiddenStatesMode = False
    return_routed_experts: bool = False
    routed_experts_start_len: Int64 = 0
    return_indexer_topk: bool = False
    session_id: Optional[str] = None
    session_params: Optional[SessionParams] = None
    lora_id: Optional[str] = None
    custom_logit_processor: Optional[str] = None
    positional_embed_overrides: Optional[PositionalEmbeds] = None
    bootstrap_host: Optional[str] = None
    bootstrap_port: Optional[Int64] = None
    bootstrap_room: Optional[UInt64] = None
    bootstrap_pair_key: Optional[str] = None
    decode_tp_size: Optional[Int64] = None
    routed_dp_rank: Optional[Int64] = None
    disagg_prefill_dp_rank: Optional[Int64] = None
    routing_key: Optional[str] = None
    require_reasoning: bool = False
    priority: Optional[Int64] = None
    extra_key: Optional[str] = None
    no_logs: bool = False
    return_bytes: bool = False
    return_entropy: bool = False
    need_wait_for_mm_inputs: Optional[bool] = None
    num_items_assigned: Optional[Dict[Modality, List[Int64]]] = None
    encoder_urls: Optional[List[str]] = None
    multi_item_delimiter_indices: Optional[List[Int64]] = None
    token_indices_to_pool: Optional[List[Int64]] = None
    time_stats: Optional[Union[APIServerReqTimeStats, DPControllerReqTimeStats, PickleWrapper]] = None
    cache_salt: Optional[str] = None
    kv_hints: Optional[KvHintsEnvelope] = None
    pp_prefetch_ticketed: bool = False
    sampling_logprobs_mode: SamplingLogprobsMode = "selected"
    lora_name: Optional[str] = None


class BatchTokenizedGenerateReqInput(BaseBatchReq, kw_only=True):
    batch: List[TokenizedGenerateReqInput]


class TokenizedEmbeddingReqInput(BaseReq, kw_only=True):
    input_text: Optional[Union[str, List[Union[str, List[str]]]]]
    input_ids: Optional[array]
    mm_inputs: Optional[MultimodalProcessorOutput]
    token_type_ids: Optional[List[Int64]]
    sampling_params: SamplingParams
    lora_id: Optional[str] = None
    positional_embed_overrides: Optional[PositionalEmbeds] = None
    routed_dp_rank: Optional[Int64] = None
    priority: Optional[Int64] = None
    dimensions: Optional[Int64] = None
    return_pooled_hidden_states: bool = False
    multi_item_delimiter_indices: Optional[List[Int64]] = None
    token_indices_to_pool: Optional[List[Int64]] = None
    decision_layout: Optional[List[Int64]] = None
    time_stats: Optional[Union[APIServerReqTimeStats, DPControllerReqTimeStats, PickleWrapper]] = None
    lora_name: Optional[str] = None


class BatchTokenizedEmbeddingReqInput(BaseBatchReq, kw_only=True):
    batch: List[TokenizedEmbeddingReqInput]


class BatchTokenIDOutput(BaseBatchReq, kw_only=True):
    finished_reasons: List[Optional[FinishReasonDict]]
    decoded_texts: List[str]
    decode_ids: List[array]
    read_offsets: List[Int64]
    output_ids: Optional[List[array]]
    skip_special_tokens: List[bool]
    spaces_between_special_tokens: List[bool]
    no_stop_trim: List[bool]
    prompt_tokens: List[Int64]
    reasoning_tokens: List[Int64]
    completion_tokens: List[Int64]
    cached_tokens: List[Int64]
    input_token_logprobs_val: TokenLogprobValues
    input_token_logprobs_idx: TokenLogprobIndices
    output_token_logprobs_val: TokenLogprobValues
    output_token_logprobs_idx: TokenLogprobIndices
    input_top_logprobs_val: TopLogprobValues
    input_top_logprobs_idx: TopLogprobIndices
    output_top_logprobs_val: TopLogprobValues
    output_top_logprobs_idx: TopLogprobIndices
    input_token_ids_logprobs_val: TokenIdsLogprobValues
    input_token_ids_logprobs_idx: TokenIdsLogprobIndices
    output_token_ids_logprobs_val: TokenIdsLogprobValues
    output_token_ids_logprobs_idx: TokenIdsLogprobIndices
    output_token_entropy_val: Optional[List[Optional[float]]]
    output_token_sampling_mask: Optional[List[Optional[SamplingMaskChunk]]]
    output_hidden_states: OutputHiddenStates
    routed_experts: Optional[List[Optional[torch.Tensor]]]
    indexer_topk: Optional[List[Optional[torch.Tensor]]]
    placeholder_tokens_idx: Optional[List[Optional[List[Int64]]]]
    placeholder_tokens_val: Optional[List[Optional[List[Int64]]]]
    retraction_counts: Optional[List[Int64]] = None
    beam_search_output: Optional[List[Optional[BeamSearchOutput]]] = None
    weight_versions: Optional[List[Optional[WeightVersionSpans]]] = None
    token_steps: Optional[List[List[Int64]]] = None
    customized_info: Optional[Union[Dict[str, List[Any]], PickleWrapper]] = None
    cached_tokens_details: Optional[List[Optional[CachedTokensDetails]]] = None
    dp_ranks: Optional[List[Optional[Int64]]] = None
    time_stats: Optional[Union[BatchReqTimeStats, PickleWrapper]] = None
    image_tokens: Optional[List[Int64]] = None
    audio_tokens: Optional[List[Int64]] = None
    video_tokens: Optional[List[Int64]] = None
    spec_verify_ct: Optional[List[Int64]] = None
    spec_num_correct_drafts: Optional[List[Int64]] = None
    spec_num_block_accept_tokens: Optional[List[Int64]] = None
    spec_num_cap_tokens: Optional[List[Int64]] = None
    spec_correct_drafts_histogram: Optional[List[List[Int64]]] = None
    spec_cap_lens_histogram: Optional[List[List[Int64]]] = None
    input_top_logprobs_val_flat: Optional[List[Optional[np.ndarray]]] = None
    input_top_logprobs_idx_flat: Optional[List[Optional[np.ndarray]]] = None
    input_top_logprobs_flat_null_prefix: Optional[List[Optional[Int64]]] = None


class BatchStrOutput(BaseBatchReq, kw_only=True):
    finished_reasons: List[Optional[FinishReasonDict]]
    output_strs: List[str]
    output_ids: Optional[List[array]]
    prompt_tokens: List[Int64]
    completion_tokens: List[Int64]
    reasoning_tokens: List[Int64]
    cached_tokens: List[Int64]
    input_token_logprobs_val: TokenLogprobValues
    input_token_logprobs_idx: TokenLogprobIndices
    output_token_logprobs_val: TokenLogprobValues
    output_token_logprobs_idx: TokenLogprobIndices
    input_top_logprobs_val: TopLogprobValues
    input_top_logprobs_idx: TopLogprobIndices
    output_top_logprobs_val: TopLogprobValues
    output_top_logprobs_idx: TopLogprobIndices
    input_token_ids_logprobs_val: TokenIdsLogprobValues
    input_token_ids_logprobs_idx: TokenIdsLogprobIndices
    output_token_ids_logprobs_val: TokenIdsLogprobValues
    output_token_ids_logprobs_idx: TokenIdsLogprobIndices
    output_token_entropy_val: Optional[List[Optional[float]]]
    output_token_sampling_mask: Optional[List[Optional[SamplingMaskChunk]]]
    output_hidden_states: OutputHiddenStates
    routed_experts: Optional[List[Optional[str]]]
    indexer_topk: Optional[List[Optional[str]]]
    placeholder_tokens_idx: Optional[List[Optional[List[Int64]]]]
    placeholder_tokens_val: Optional[List[Optional[List[Int64]]]]
    retraction_counts: Optional[List[Int64]] = None
    beam_search_output: Optional[List[Optional[BeamSearchOutput]]] = None
    weight_versions: Optional[List[Optional[WeightVersionSpans]]] = None
    token_steps: Optional[List[List[Int64]]] = None
    customized_info: Optional[Union[Dict[str, List[Any]], PickleWrapper]] = None
    cached_tokens_details: Optional[List[Optional[CachedTokensDetails]]] = None
    dp_ranks: Optional[List[Optional[Int64]]] = None
    time_stats: Optional[Union[BatchReqTimeStats, PickleWrapper]] = None
    image_tokens: Optional[List[Int64]] = None
    audio_tokens: Optional[List[Int64]] = None
    video_tokens: Optional[List[Int64]] = None
    spec_verify_ct: Optional[List[Int64]] = None
    spec_num_correct_drafts: Optional[List[Int64]] = None
    spec_num_block_accept_tokens: Optional[List[Int64]] = None
    spec_num_cap_tokens: Optional[List[Int64]] = None
    spec_correct_drafts_histogram: Optional[List[List[Int64]]] = None
    spec_cap_lens_histogram: Optional[List[List[Int64]]] = None
    input_top_logprobs_val_flat: Optional[List[Optional[np.ndarray]]] = None
    input_top_logprobs_idx_flat: Optional[List[Optional[np.ndarray]]] = None
    input_top_logprobs_flat_null_prefix: Optional[List[Optional[Int64]]] = None


class BatchEmbeddingOutput(BaseBatchReq, kw_only=True):
    finished_reasons: List[Optional[FinishReasonDict]]
    embeddings: List[Union[List[Union[float, List[float]]], Dict[Int64, float], float]]
    prompt_tokens: List[Int64]
    cached_tokens: List[Int64]
    placeholder_tokens_idx: Optional[List[Optional[List[Int64]]]]
    placeholder_tokens_val: Optional[List[Optional[List[Int64]]]]
    retraction_counts: Optional[List[Int64]] = None
    cached_tokens_details: Optional[List[Optional[CachedTokensDetails]]] = None
    time_stats: Optional[Union[BatchReqTimeStats, PickleWrapper]] = None
    pooled_hidden_states: Optional[List[Optional[torch.Tensor]]] = None
