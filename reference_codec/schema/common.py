"""Nested structs and enums that IPC messages carry.

Each mirrors the SGLang 0.5.23 class of the same name (field names, order,
types, defaults and struct options that change the wire form), without the
behaviour SGLang attaches to them: the reference schema describes bytes, not
scheduler logic. Where SGLang types a field as ``object`` the reference does
too; the codec then preserves exact Python types through the reference
extension codes documented in :mod:`reference_codec.wire`.
"""

from __future__ import annotations

import enum
from array import array
from typing import Any, Dict, List, Literal, Optional, Set, Tuple, Union

import msgspec
import numpy as np
import torch

from .scalars import Int64, Int128, UInt64

__all__ = [
    "Modality",
    "MultimodalInputFormat",
    "ProfileReqType",
    "ExpertDistributionReqType",
    "BlockReqType",
    "ReturnHiddenStatesMode",
    "SamplingLogprobsMode",
    "WeightSelector",
    "WatermarkRequestConfig",
    "SamplingParams",
    "SessionParams",
    "MultimodalDataItem",
    "MultimodalProcessorOutput",
    "PositionalEmbeds",
    "SamplingMaskChunk",
    "WeightVersionSpan",
    "WeightVersionSpans",
    "KvHintAction",
    "KvHintsEnvelope",
    "BeamSearchSequence",
    "LoRARef",
    "ExpertWeightPointer",
    "ParallelismInfo",
    "ChecksumInfo",
    "Function",
    "Tool",
    "TraceContext",
    "APIServerReqTimeStats",
    "DPControllerReqTimeStats",
    "SchedulerReqTimeStats",
    "FinishReasonDict",
    "CachedTokensDetails",
    "TokenLogprobValues",
    "TokenLogprobIndices",
    "TopLogprobValues",
    "TopLogprobIndices",
    "TokenIdsLogprobValues",
    "TokenIdsLogprobIndices",
    "HiddenStateChunk",
    "OutputHiddenStates",
    "NESTED_TYPES",
    "ENUM_TYPES",
]


# --- enums (encoded by value, as msgspec does for SGLang) -------------------


class Modality(enum.Enum):
    IMAGE = 1
    VIDEO = 2
    AUDIO = 3


class MultimodalInputFormat(enum.Enum):
    NORMAL = 1
    PROCESSOR_OUTPUT = 2
    PRECOMPUTED_EMBEDDING = 3


class ProfileReqType(enum.Enum):
    START_PROFILE = 1
    STOP_PROFILE = 2


class ExpertDistributionReqType(enum.Enum):
    START_RECORD = 1
    STOP_RECORD = 2
    DUMP_RECORD = 3


class BlockReqType(enum.Enum):
    BLOCK = 1
    UNBLOCK = 2


ReturnHiddenStatesMode = Union[bool, Literal["last"]]
SamplingLogprobsMode = Literal["selected", "support"]
WeightSelector = Literal["target", "draft", "all"]

# --- type aliases shared by the output messages -----------------------------

TokenLogprobValues = Optional[List[Optional[List[Optional[float]]]]]
TokenLogprobIndices = Optional[List[Optional[List[Optional[Int64]]]]]
TopLogprobValues = Optional[List[Optional[List[Optional[List[float]]]]]]
TopLogprobIndices = Optional[List[Optional[List[Optional[List[Int64]]]]]]
TokenIdsLogprobValues = Optional[List[Optional[List[Optional[List[float]]]]]]
TokenIdsLogprobIndices = Optional[List[Optional[List[Optional[List[Int64]]]]]]
HiddenStateChunk = List[Optional[Union[float, List[float]]]]
OutputHiddenStates = Optional[List[Optional[List[HiddenStateChunk]]]]
CachedTokensDetails = Dict[str, Union[Int64, str]]
#: Serialized ``BaseFinishReason.to_json()``; every value is a primitive.
FinishReasonDict = Dict[str, Optional[Union[str, Int64, List[Int64]]]]

_JsonScalar = Union[None, bool, Int64, float, str]
CustomParamValue = Union[_JsonScalar, List[_JsonScalar], Dict[str, _JsonScalar]]


# --- sampling ---------------------------------------------------------------


class WatermarkRequestConfig(msgspec.Struct, frozen=True, kw_only=True):
    enabled: Optional[bool] = None
    key: Optional[str] = None
    context_window: Optional[Int64] = None


class SamplingParams(msgspec.Struct, kw_only=True, array_like=True):
    """Wire form of SGLang's SamplingParams (normalisation logic omitted)."""

    max_new_tokens: Optional[Int64] = 128
    stop: Optional[Union[str, List[str]]] = None
    stop_token_ids: Optional[Set[Int64]] = None
    stop_regex: Optional[Union[str, List[str]]] = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: Int64 = 1 << 30
    min_p: float = 0.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_new_tokens: Int64 = 0
    n: Int64 = 1
    beam_width: Optional[Int64] = None
    json_schema: Optional[str] = None
    regex: Optional[str] = None
    ebnf: Optional[str] = None
    structural_tag: Optional[str] = None
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    no_stop_trim: bool = False
    stream_interval: Optional[Int64] = None
    logit_bias: Optional[Dict[str, float]] = None
    sampling_seed: Optional[Int64] = None
    custom_params: Optional[Dict[str, CustomParamValue]] = None
    watermark: Optional[WatermarkRequestConfig] = None
    stop_strs: Optional[Union[str, List[str]]] = None
    stop_regex_strs: Optional[Union[str, List[str]]] = None
    stop_str_max_len: Int64 = 0
    stop_regex_max_len: Int64 = 0
    is_normalized: bool = False
    ebnf_full_assistant: bool = False


class SessionParams(msgspec.Struct, kw_only=True, array_like=True):
    id: Optional[str] = None
    rid: Optional[str] = None
    offset: Optional[Int64] = None
    replace: Optional[bool] = None
    drop_previous_output: Optional[bool] = None


# --- multimodal -------------------------------------------------------------


class MultimodalDataItem(msgspec.Struct, kw_only=True, array_like=True):
    """One image, video or audio input after processing.

    ``feature``, ``precomputed_embeddings`` and the values of
    ``model_specific_data`` are untyped in SGLang (tensors, arrays, scalars,
    nested containers); the reference keeps them untyped and preserves their
    exact Python types.
    """

    modality: Modality
    hash: Optional[UInt64] = None
    pad_value: Optional[Int64] = None
    offsets: Optional[List[Tuple[Int64, Int64]]] = None
    format: MultimodalInputFormat = MultimodalInputFormat.NORMAL
    feature: Optional[object] = None
    precomputed_embeddings: Optional[object] = None
    keep_device_embedding: bool = False
    model_specific_data: Dict[str, object] = msgspec.field(default_factory=dict)
    identity: Optional[bytes] = None
    pad_values: Optional[Tuple[Int64, ...]] = None


class MultimodalProcessorOutput(msgspec.Struct, kw_only=True, array_like=True):
    mm_items: List[MultimodalDataItem]
    input_ids: Optional[List[Int64]] = None
    padded_input_ids: Optional[List[Int64]] = None
    im_token_id: Optional[Int64] = None
    im_start_id: Optional[Int64] = None
    im_end_id: Optional[Int64] = None
    slice_start_id: Optional[Int64] = None
    slice_end_id: Optional[Int64] = None
    video_token_id: Optional[Int64] = None
    audio_token_id: Optional[Int64] = None
    audio_start_id: Optional[Int64] = None
    audio_end_id: Optional[Int64] = None
    mrope_positions: Optional[torch.Tensor] = None
    mrope_position_delta: Optional[torch.Tensor] = None
    vision_position_ids: Optional[torch.Tensor] = None
    media_nums_per_sample: Optional[List[Int64]] = None
    visible_frame_counts: Optional[torch.Tensor] = None
    token_type_ids: Optional[torch.Tensor] = None


class PositionalEmbeds(msgspec.Struct, array_like=True):
    """Embeddings placed at token positions; ``embeds`` is an ``[N, hidden]`` tensor."""

    embeds: object
    positions: List[Int64]


class SamplingMaskChunk(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """One request's sampling masks in one output batch, one row per output token."""

    lengths: np.ndarray
    token_ids: np.ndarray
    logprobs: np.ndarray


# --- weights, LoRA, tools ---------------------------------------------------


class WeightVersionSpan(msgspec.Struct, kw_only=True, array_like=True):
    version: str
    start: Int64
    end: Int64


WeightVersionSpans = List[WeightVersionSpan]


class KvHintAction(msgspec.Struct, frozen=True, kw_only=True):
    action_id: str
    action_type: str
    action_version: str
    payload: Dict[str, Any] = {}


class KvHintsEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    protocol_version: str
    message_id: str
    actions: List[KvHintAction] = []


class BeamSearchSequence(msgspec.Struct, omit_defaults=True):
    tokens: List[Int64]
    cum_logprob: float = 0.0
    finish_reason: Optional[object] = None
    text: Optional[str] = None
    beam_score: Optional[float] = None


class LoRARef(msgspec.Struct, frozen=True, array_like=True):
    # SGLang defaults lora_id to a fresh uuid4 hex; a schema default must be
    # deterministic, so the reference requires it on construction instead.
    lora_id: str
    lora_name: Optional[str] = None
    lora_path: Optional[str] = None
    pinned: Optional[bool] = None


class ExpertWeightPointer(msgspec.Struct, kw_only=True, array_like=True):
    weight_ptr: UInt64
    byte_size: Int64


class ParallelismInfo(msgspec.Struct, kw_only=True):
    role: str
    tp_rank: Int64
    tp_size: Int64
    dp_rank: Int64
    dp_size: Int64
    pp_rank: Int64
    pp_size: Int64
    rank: Int64
    size: Int64


class ChecksumInfo(msgspec.Struct, kw_only=True):
    checksums: Dict[str, str]
    per_gpu_checksum: str
    parallelism_info: List[ParallelismInfo]


class Function(msgspec.Struct, kw_only=True, array_like=True):
    description: Optional[str] = None
    name: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None


class Tool(msgspec.Struct, kw_only=True, array_like=True):
    function: Function
    type: str = "function"


# --- observability (concrete where SGLang 0.5.23 sends a PickleWrapper) -----


class TraceContext(msgspec.Struct, kw_only=True, array_like=True):
    """Propagated OpenTelemetry span context of one request."""

    trace_id: Int128
    span_id: UInt64
    trace_flags: Int64 = 1


class APIServerReqTimeStats(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    created_time: float = 0.0
    finished_time: float = 0.0
    first_token_time: float = 0.0
    last_time: float = 0.0
    tokenize_finish_time: float = 0.0
    api_server_dispatch_time: float = 0.0
    api_server_dispatch_finish_time: float = 0.0
    response_sent_to_client_time: float = 0.0
    diff_realtime_monotonic: float = 0.0
    trace: Optional[TraceContext] = None


class DPControllerReqTimeStats(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    created_time: float = 0.0
    api_server_dispatch_time: float = 0.0
    dpc_dispatch_time: float = 0.0
    dpc_dispatch_finish_time: float = 0.0
    diff_realtime_monotonic: float = 0.0
    trace: Optional[TraceContext] = None


class SchedulerReqTimeStats(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    created_time: float = 0.0
    api_server_dispatch_time: float = 0.0
    dpc_dispatch_time: float = 0.0
    wait_queue_entry_time: float = 0.0
    forward_entry_time: float = 0.0
    prefill_finished_time: float = 0.0
    completion_time: float = 0.0
    prefill_bootstrap_queue_entry_time: float = 0.0
    prefill_transfer_queue_entry_time: float = 0.0
    prefill_kv_transfer_finish_time: float = 0.0
    decode_prealloc_queue_entry_time: float = 0.0
    decode_transfer_queue_entry_time: float = 0.0
    decode_prebuilt_finish_time: float = 0.0
    bootstrap_done_time: float = 0.0
    scheduler_recv_time: float = 0.0
    last_chunked_prefill_finish_time: float = 0.0
    last_decode_finish_time: float = 0.0
    decode_ct: Int64 = 0
    last_decode_scheduled_time: float = 0.0
    last_forward_entry_time: float = 0.0
    last_prefill_finished_time: float = 0.0
    run_batch_cpu_start_time: float = 0.0
    spec_draft_start_time: float = 0.0
    spec_verify_start_time: float = 0.0
    transfer_speed_gb_s: float = 0.0
    transfer_total_mb: float = 0.0
    queue_duration_s: float = 0.0
    storage_prefetch_wait_s: Optional[float] = None
    storage_staging_wait_s: Optional[float] = None
    has_timing_data: bool = False
    diff_realtime_monotonic: float = 0.0
    trace: Optional[TraceContext] = None


#: Every struct that messages nest, for registries and strategies.
NESTED_TYPES: Tuple[type, ...] = (
    WatermarkRequestConfig,
    SamplingParams,
    SessionParams,
    MultimodalDataItem,
    MultimodalProcessorOutput,
    PositionalEmbeds,
    SamplingMaskChunk,
    WeightVersionSpan,
    KvHintAction,
    KvHintsEnvelope,
    BeamSearchSequence,
    LoRARef,
    ExpertWeightPointer,
    ParallelismInfo,
    ChecksumInfo,
    Function,
    Tool,
    TraceContext,
    APIServerReqTimeStats,
    DPControllerReqTimeStats,
    SchedulerReqTimeStats,
)

#: Every enum the schema holds; the only enums the codec will rebuild from the wire.
ENUM_TYPES: Tuple[type, ...] = (
    Modality,
    MultimodalInputFormat,
    ProfileReqType,
    ExpertDistributionReqType,
    BlockReqType,
)

# ``array`` is imported for the message modules' annotations.
_ = array
