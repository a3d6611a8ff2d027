"""Control-plane messages: cache, weights, LoRA, sessions, profiling, scaling, admin.

One class per message, in SGLang 0.5.23's order, with its field names, order,
types and defaults. ``LoadLoRAAdapterReqOutput``, ``UnloadLoRAAdapterReqOutput``
and ``LoadLoRAAdapterFromTensorsReqOutput`` are aliases of ``LoRAUpdateOutput``
there and here (one tag on the wire).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

import msgspec

from ._base import BaseReq
from .common import (
    BlockReqType,
    ChecksumInfo,
    ExpertDistributionReqType,
    ExpertWeightPointer,
    FinishReasonDict,
    LoRARef,
    ProfileReqType,
    Tool,
    WeightVersionSpans,
)
from .scalars import Int64


class ClearHiCacheReqInput(BaseReq, kw_only=True):
    pass


class ClearHiCacheReqOutput(BaseReq, kw_only=True):
    success: bool


class FlushCacheReqInput(BaseReq, kw_only=True):
    timeout_s: Optional[float] = None


class FlushCacheReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str = ""


class AddExternalCorpusReqInput(BaseReq, kw_only=True):
    corpus_id: Optional[str] = None
    file_path: Optional[str] = None
    documents: Optional[List[str]] = None
    token_chunks: Optional[List[List[Int64]]] = None


class AddExternalCorpusReqOutput(BaseReq, kw_only=True):
    success: bool
    corpus_id: str = ""
    message: str = ""
    loaded_token_count: Int64 = 0


class RemoveExternalCorpusReqInput(BaseReq, kw_only=True):
    corpus_id: str


class RemoveExternalCorpusReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str = ""


class ListExternalCorporaReqInput(BaseReq, kw_only=True):
    pass


class ListExternalCorporaReqOutput(BaseReq, kw_only=True):
    success: bool
    corpus_token_counts: Dict[str, Int64] = msgspec.field(default_factory=dict)
    message: str = ""


class AttachHiCacheStorageReqInput(BaseReq, kw_only=True):
    hicache_storage_backend: str
    hicache_storage_backend_extra_config_json: Optional[str] = None
    hicache_storage_prefetch_policy: Optional[str] = None
    hicache_write_policy: Optional[str] = None


class AttachHiCacheStorageReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str = ""


class DetachHiCacheStorageReqInput(BaseReq, kw_only=True):
    pass


class DetachHiCacheStorageReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str = ""


class PauseGenerationReqInput(BaseReq, kw_only=True):
    mode: Literal["abort", "retract", "in_place"] = "abort"


class ContinueGenerationReqInput(BaseReq, kw_only=True):
    torch_empty_cache: bool = True


class TokenizerWorkerRegistrationReq(BaseReq, kw_only=True):
    worker_ipc_name: str


class PauseContinueBroadcastReq(BaseReq, kw_only=True):
    is_pause: bool


class UpdateWeightFromDiskReqInput(BaseReq, kw_only=True):
    model_path: str
    load_format: Optional[str] = None
    abort_all_requests: bool = False
    weight_version: Optional[str] = None
    is_async: bool = False
    torch_empty_cache: bool = False
    keep_pause: bool = False
    recapture_cuda_graph: bool = False
    token_step: Int64 = 0
    flush_cache: bool = True
    manifest: Optional[Dict[str, Any]] = None


class UpdateWeightFromDiskReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str
    num_paused_requests: Int64 = 0


class UpdateWeightsFromDistributedReqInput(BaseReq, kw_only=True):
    names: List[str]
    dtypes: List[str]
    shapes: List[List[Int64]]
    group_name: str = "weight_update_group"
    flush_cache: bool = True
    abort_all_requests: bool = False
    weight_version: Optional[str] = None
    load_format: Optional[str] = None
    selector: Literal["target", "draft", "all"] = "all"
    torch_empty_cache: bool = False


class UpdateWeightsFromDistributedReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class UpdateWeightsFromTensorReqInput(BaseReq, kw_only=True):
    serialized_named_tensors: List[bytes]
    load_format: Optional[str] = None
    flush_cache: bool = True
    abort_all_requests: bool = False
    weight_version: Optional[str] = None
    selector: Literal["target", "draft", "all"] = "all"
    torch_empty_cache: bool = False


class UpdateWeightsFromTensorReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class InitWeightsSendGroupForRemoteInstanceReqInput(BaseReq, kw_only=True):
    master_address: str
    ports: str
    group_rank: Int64
    world_size: Int64
    group_name: str = "weight_send_group"
    backend: str = "nccl"


class UpdateWeightsFromIPCReqInput(BaseReq, kw_only=True):
    zmq_handles: Dict[str, str]
    flush_cache: bool = True
    weight_version: Optional[str] = None
    torch_empty_cache: bool = False


class UpdateWeightsFromIPCReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class InitWeightsSendGroupForRemoteInstanceReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class SendWeightsToRemoteInstanceReqInput(BaseReq, kw_only=True):
    master_address: str
    ports: str
    group_name: str = "weight_send_group"


class SendWeightsToRemoteInstanceReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class UpdateExpertBackupReq(BaseReq, kw_only=True):
    pass


class BackupDramReq(BaseReq, kw_only=True):
    rank: Int64
    weight_pointer_map: Dict[str, ExpertWeightPointer]
    session_id: str
    buffer_size: Int64


class InitWeightsUpdateGroupReqInput(BaseReq, kw_only=True):
    master_address: str
    master_port: Int64
    rank_offset: Int64
    world_size: Int64
    group_name: str = "weight_update_group"
    backend: str = "nccl"


class InitWeightsUpdateGroupReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class DestroyWeightsUpdateGroupReqInput(BaseReq, kw_only=True):
    group_name: str = "weight_update_group"


class DestroyWeightsUpdateGroupReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class UpdateWeightVersionReqInput(BaseReq, kw_only=True):
    new_version: str
    abort_all_requests: bool = True


class UpdateWeightVersionReqOutput(BaseReq, kw_only=True):
    pass


class GetWeightsByNameReqInput(BaseReq, kw_only=True):
    name: str
    truncate_size: Int64 = 100


class GetWeightsByNameReqOutput(BaseReq, kw_only=True):
    parameter: Optional[List[Union[float, List[float]]]]


class ReleaseMemoryOccupationReqInput(BaseReq, kw_only=True):
    tags: Optional[List[str]] = None


class ReleaseMemoryOccupationReqOutput(BaseReq, kw_only=True):
    pass


class ResumeMemoryOccupationReqInput(BaseReq, kw_only=True):
    tags: Optional[List[str]] = None


class ResumeMemoryOccupationReqOutput(BaseReq, kw_only=True):
    pass


class BeginWeightUpdateReqInput(BaseReq, kw_only=True):
    selector: Literal["target", "draft", "all"] = "all"


class BeginWeightUpdateReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class EndWeightUpdateReqInput(BaseReq, kw_only=True):
    pass


class EndWeightUpdateReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class CheckWeightsReqInput(BaseReq, kw_only=True):
    action: str = "checksum"
    allow_quant_error: bool = False
    skip_tensor_list: Optional[List[str]] = None
    selector: Literal["target", "draft", "all"] = "all"


class CheckWeightsReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str
    payload: Optional[List[ChecksumInfo]] = None


class SlowDownReqInput(BaseReq, kw_only=True):
    forward_sleep_time: Optional[float]


class SlowDownReqOutput(BaseReq, kw_only=True):
    pass


class PdRoleSwitchReqInput(BaseReq, kw_only=True):
    new_role: Literal["prefill", "decode", ""] = ""
    decode_cuda_graph_bs: Optional[List[Int64]] = None
    decode_cuda_graph_memory_gb: Optional[float] = None
    prepare_only: bool = False


class PdRoleSwitchReqOutput(BaseReq, kw_only=True):
    success: bool = False
    message: str = ""
    old_role: str = ""
    new_role: str = ""
    safe_to_restore: bool = False


class AbortReq(BaseReq, kw_only=True):
    abort_all: bool = False
    finished_reason: Optional[FinishReasonDict] = None
    abort_message: Optional[str] = None
    weight_versions: Optional[WeightVersionSpans] = None


class EncoderDispatchErrorReq(BaseReq, kw_only=True):
    error_msg: str
    error_code: Int64


class ActiveRanksOutput(BaseReq, kw_only=True):
    status: List[bool]


class ElasticScaleUpdateReq(BaseReq, kw_only=True):
    success: bool
    effective_ep_size: Int64
    slot_offset: Int64 = 0
    slot_count: Int64 = 0
    error: Optional[str] = None


class ScaleElasticEPReqInput(BaseReq, kw_only=True):
    new_ep_size: Int64


class ScaleElasticEPReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str
    old_ep_size: Int64 = 0
    new_ep_size: Int64 = 0
    pending_ep_size: Optional[Int64] = None
    scale_phase: str = "idle"


class GetInternalStateReq(BaseReq, kw_only=True):
    pass


class GetInternalStateReqOutput(BaseReq, kw_only=True):
    internal_state: Dict[str, Any]


class SetInternalStateReq(BaseReq, kw_only=True):
    server_args: Dict[str, Union[Int64, float]]


class SetInternalStateReqOutput(BaseReq, kw_only=True):
    updated: bool


class GetHiCacheL3LayoutReq(BaseReq, kw_only=True):
    pass


class GetHiCacheL3LayoutReqOutput(BaseReq, kw_only=True):
    layout: Dict[str, Any]


class ProfileReq(BaseReq, kw_only=True):
    req_type: ProfileReqType = ProfileReqType.START_PROFILE
    output_dir: Optional[str] = None
    start_step: Optional[Int64] = None
    num_steps: Optional[Int64] = None
    activities: Optional[List[str]] = None
    profile_by_stage: bool = False
    with_stack: Optional[bool] = None
    record_shapes: Optional[bool] = None
    profile_id: Optional[str] = None
    merge_profiles: bool = False
    profile_prefix: Optional[str] = None
    profile_stages: Optional[List[str]] = None
    detailed_annotations: bool = False


class ProfileReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class FreezeGCReq(BaseReq, kw_only=True):
    gc_threshold: Optional[List[Int64]] = None


class ShutdownReq(BaseReq, kw_only=True):
    pass


class ConfigureLoggingReq(BaseReq, kw_only=True):
    log_requests: Optional[bool] = None
    log_requests_level: Optional[Int64] = None
    log_requests_format: Optional[str] = None
    log_level: Optional[str] = None
    dump_requests_folder: Optional[str] = None
    dump_requests_threshold: Optional[Int64] = None
    crash_dump_folder: Optional[str] = None
    dump_requests_exclude_meta_keys: Optional[List[str]] = None


class OpenSessionReqInput(BaseReq, kw_only=True):
    capacity_of_str_len: Int64
    session_id: Optional[str] = None
    streaming: Optional[bool] = None
    timeout: Optional[float] = None


class CloseSessionReqInput(BaseReq, kw_only=True):
    session_id: str


class OpenSessionReqOutput(BaseReq, kw_only=True):
    session_id: Optional[str]
    success: bool


class HealthCheckOutput(BaseReq, kw_only=True):
    pass


class ExpertDistributionReq(BaseReq, kw_only=True):
    action: ExpertDistributionReqType


class ExpertDistributionReqOutput(BaseReq, kw_only=True):
    pass


class ParseFunctionCallReq(BaseReq, kw_only=True):
    text: str
    tools: List[Tool] = msgspec.field(default_factory=list)
    tool_call_parser: Optional[str] = None


class SeparateReasoningReqInput(BaseReq, kw_only=True):
    text: str
    reasoning_parser: str
    return_blocks: bool = False


class VertexGenerateReqInput(BaseReq, kw_only=True):
    instances: List[Dict[str, Any]]
    parameters: Optional[Dict[str, Any]] = None


class RpcReqInput(BaseReq, kw_only=True):
    method: str
    parameters: Optional[Dict[str, Union[bool, Int64, float, str, None]]] = None


class RpcReqOutput(BaseReq, kw_only=True):
    success: bool
    message: str


class LoadLoRAAdapterReqInput(BaseReq, kw_only=True):
    lora_name: str
    lora_path: str
    pinned: bool = False
    lora_id: Optional[str] = None


class UnloadLoRAAdapterReqInput(BaseReq, kw_only=True):
    lora_name: str
    lora_id: Optional[str] = None


class LoadLoRAAdapterFromTensorsReqInput(BaseReq, kw_only=True):
    lora_name: str
    config_dict: Dict[str, Any]
    serialized_named_tensors: List[bytes]
    pinned: bool = False
    added_tokens_config: Optional[Dict[str, Int64]] = None
    lora_id: Optional[str] = None
    load_format: Optional[str] = None
    expected_checksums: Optional[Dict[str, str]] = None


class LoRAUpdateOutput(BaseReq, kw_only=True):
    success: bool
    error_message: Optional[str] = None
    loaded_adapters: Optional[Dict[str, Union[str, LoRARef]]] = None


class BlockReqInput(BaseReq, kw_only=True):
    req_type: BlockReqType


class SetInjectDumpMetadataReqOutput(BaseReq, kw_only=True):
    success: bool


class LazyDumpTensorsReqInput(BaseReq, kw_only=True):
    pass


class LazyDumpTensorsReqOutput(BaseReq, kw_only=True):
    success: bool


class DumperControlReqInput(BaseReq, kw_only=True):
    method: str
    body: Dict[str, Any]


class DumperControlReqOutput(BaseReq, kw_only=True):
    success: bool
    response: List[Dict[str, Any]]
    error: str = ""


LoadLoRAAdapterReqOutput = UnloadLoRAAdapterReqOutput = LoadLoRAAdapterFromTensorsReqOutput = (
    LoRAUpdateOutput
)
