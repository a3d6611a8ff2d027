"""vLLM's messages as Hypothesis strategies: the generic builder with vLLM's meaning where the types cannot say it.

Classes whose ``__post_init__`` validates (``SamplingParams``,
``PoolingParams``, ``LoRARequest``, ``StructuredOutputsParams``, ...) are
drawn within vLLM's documented ranges (``_valid_fields``), so almost every
draw is a valid instance. The other families' plain ``int`` fields carry
sizes, counts, ranks, ports and token ids (``_wire_ranges``): drawn within
what vLLM produces (a block size of at least 1, a port within 16 bits, a
rank from 0), so a finding is about what the wire carries, not an
impossible configuration; the custom classes deep inside
(``MultiModalKwargsItem``, ``UtilityResult``) get strategies by type.
Untyped fields (``dict[str, Any]``) hold JSON-like values within int64, which
is what vLLM documents for them; no other engine's field meanings apply (the
builder's defaults: no semantic registry, no batch field). Imports vLLM only
when a strategy is built.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Mapping, Union

__all__ = ["REFUSED", "message_strategy"]

def _valid_fields() -> Dict[str, Dict[str, Any]]:
    """Per validated class, strategies for the fields its ``__post_init__`` checks (vLLM's documented ranges)."""
    import hypothesis.strategies as st

    from strategies import texts

    words = st.lists(texts(min_size=1, max_size=6), max_size=3)
    tokens = st.lists(st.integers(0, 2**31 - 1), max_size=4)
    unit = st.floats(0.0, 1.0)

    def temperature(ctx):
        # Greedy sampling (temperature 0) requires n == 1.
        warm = st.floats(0.01, 2.0)
        return warm if ctx.values.get("n", 1) > 1 else st.one_of(st.just(0.0), warm)

    def min_tokens(ctx):
        top = ctx.values.get("max_tokens")
        return st.integers(0, 8 if top is None else top)

    def min_pattern_size(ctx):
        return st.integers(0, ctx.values.get("max_pattern_size", 0))

    def min_count(ctx):
        return st.integers(2, 8) if ctx.values.get("max_pattern_size", 0) > 0 else st.integers(0, 8)

    return {
        "SamplingParams": {
            "n": st.integers(1, 4),
            "presence_penalty": st.floats(-2.0, 2.0),
            "frequency_penalty": st.floats(-2.0, 2.0),
            "repetition_penalty": st.floats(0.01, 2.0),
            "temperature": temperature,
            "top_p": st.floats(0.01, 1.0),
            "top_k": st.integers(-1, 64),
            "min_p": unit,
            "seed": st.one_of(st.none(), st.integers(0, 2**63 - 1)),
            "stop": st.one_of(st.none(), words),
            "stop_token_ids": st.one_of(st.none(), tokens),
            "max_tokens": st.one_of(st.none(), st.integers(1, 4096)),
            "min_tokens": min_tokens,
            "logprobs": st.one_of(st.none(), st.integers(-1, 20)),
            "prompt_logprobs": st.one_of(st.none(), st.integers(-1, 20)),
            "detokenize": lambda ctx: st.booleans() if not ctx.values.get("stop") else st.just(True),  # stop strings need it
            "stream_interval": st.one_of(st.none(), st.integers(1, 16)),
            "bad_words": st.one_of(st.none(), words),
            "thinking_token_budget": st.one_of(st.none(), st.integers(0, 4096)),
            "trace_decode_token_ids": st.none(),
        },
        "RepetitionDetectionParams": {
            "max_pattern_size": st.integers(0, 16),
            "min_pattern_size": min_pattern_size,
            "min_count": min_count,
        },
        "PoolingParams": {"task": st.one_of(st.none(), st.sampled_from(["embed", "classify", "token_embed", "token_classify"]))},
        "LateChunkingParams": {"chunk_size": st.integers(1, 2**63 - 1)},
        "LoRARequest": {
            "lora_name": texts(max_size=8),
            "lora_int_id": st.integers(1, 2**31 - 1),
            "lora_path": texts(min_size=1, max_size=16),
            "base_model_name": st.one_of(st.none(), texts(max_size=8)),
            "load_inplace": st.booleans(),
            "is_3d_lora_weight": st.booleans(),
        },
    }


def _wire_ranges() -> Dict[str, Dict[str, Any]]:
    """Per class of the non-engine-core families, by name, strategies for fields whose type is a bare ``int`` that means more."""
    import hypothesis.strategies as st

    size = st.integers(1, 2**20)
    count = st.integers(0, 2**31 - 1)
    rank = st.integers(0, 1023)
    degree = st.integers(1, 1024)
    port = st.integers(0, 65535)
    token = st.integers(0, 2**31 - 1)

    def maybe(strategy):
        return st.one_of(st.none(), strategy)

    return {
        "EngineCoreReadyResponse": {
            "max_model_len": size,
            "num_gpu_blocks": count,
            "block_size": size,
            "world_size": degree,
            "data_parallel_size": degree,
            "tensor_parallel_size": degree,
            "pipeline_parallel_size": degree,
            "decode_context_parallel_size": degree,
            "data_parallel_rank": rank,
            "max_num_seqs": size,
            "max_num_batched_tokens": size,
            "max_loras": st.integers(0, 1024),
            "mamba_block_size": maybe(size),
            "kv_cache_size_tokens": maybe(count),
            "kv_cache_max_concurrency": maybe(st.floats(0.0, 1e6)),
            "effective_attention_block_size": maybe(size),
            "coord_store_port": port,
        },
        "ExternalElasticEPScaleUpHandshakeMetadata": {"num_redundant_experts": st.integers(0, 1024), "elastic_ep_max_dp_size": degree},
        "CoordinatorStats": {
            # Per engine [waiting, running].
            "engine_req_counts_list": maybe(st.lists(st.lists(count, min_size=2, max_size=2), max_size=4)),
            "current_wave": count,
        },
        "StartDpWave": {"wave": count, "exclude_engine_index": maybe(rank)},
        "ScaleElasticEp": {"new_engine_count": degree},
        "BlockStored": {
            "token_ids": st.lists(token, max_size=16),
            "block_size": st.integers(1, 256),
            "lora_id": maybe(st.integers(1, 2**31 - 1)),
            "group_idx": maybe(st.integers(0, 63)),
        },
        "XferReq": {"connector_version": st.integers(0, 2**31 - 1)},
        "XferAck": {"src_block_indices": st.lists(count, max_size=8)},
        "MooncakeXferMetadata": {"remote_port": port, "remote_tp_size": degree, "remote_tp_rank": rank, "remote_pp_size": st.integers(1, 64)},
        "MoRIIOAgentMetadata": {"num_blocks": count, "block_len": size},
        "NixlAgentMetadata": {
            "device_id": st.integers(0, 255),
            "num_blocks": count,
            "block_size": st.integers(1, 256),
            "dcp_size": st.integers(1, 64),
            "pcp_size": st.integers(1, 64),
            "physical_blocks_per_logical_kv_block": st.integers(1, 64),
        },
    }


def _classes_by_name() -> Dict[str, type]:
    """The families' root classes and the KV events' event classes, by name (for :func:`_wire_ranges`)."""
    import importlib

    from .families import KV_EVENTS_MODULE, all_roots

    try:
        events = importlib.import_module(KV_EVENTS_MODULE)
    except ImportError:
        return dict(all_roots())
    return {**all_roots(), **{cls.__name__: cls for cls in (events.BlockStored, events.BlockRemoved)}}


def _structured_outputs():
    """``StructuredOutputsParams`` with exactly one kind of constraint, as its ``__post_init__`` requires."""
    import hypothesis.strategies as st
    from vllm.sampling_params import StructuredOutputsParams

    from strategies import texts

    kinds = _existing(
        StructuredOutputsParams,
        {
            "json": st.one_of(texts(max_size=16), st.dictionaries(texts(max_size=6), _untyped(), max_size=3)),
            "regex": texts(max_size=16),
            "choice": st.lists(texts(max_size=6), min_size=1, max_size=3),
            "grammar": texts(max_size=16),
            "json_object": st.booleans(),
            "structural_tag": texts(max_size=16),
        },
    )
    one = st.sampled_from(sorted(kinds)).flatmap(lambda kind: kinds[kind].map(lambda v: {kind: v}))
    flags = _existing(StructuredOutputsParams, {"disable_any_whitespace": st.booleans(), "disable_additional_properties": st.booleans()})
    return st.builds(lambda chosen, flags: StructuredOutputsParams(**chosen, **flags), one, st.fixed_dictionaries({}, optional=flags))


def _mm_kwargs_items():
    """``MultiModalKwargsItem``: a ``UserDict`` of field elements, each tensors (or None: cached) and a batching field."""
    import hypothesis.strategies as st
    from vllm.multimodal.inputs import (
        MultiModalBatchedField,
        MultiModalFieldElem,
        MultiModalFlatField,
        MultiModalKwargsItem,
        MultiModalSharedField,
    )

    from strategies import tensors, texts

    small = tensors(max_dims=2, max_side=3, requires_grad=False)
    data = st.one_of(st.none(), small, st.lists(small, min_size=1, max_size=2))
    spans = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)).map(lambda ab: slice(min(ab), max(ab))), min_size=1, max_size=2)
    fields = st.one_of(
        st.builds(MultiModalBatchedField),
        st.builds(MultiModalSharedField, batch_size=st.integers(1, 4)),
        st.builds(MultiModalFlatField, slices=spans, dim=st.integers(0, 1)),
    )
    elems = st.builds(MultiModalFieldElem, data=data, field=fields)
    return st.dictionaries(texts(min_size=1, max_size=8), elems, max_size=2).map(MultiModalKwargsItem)


@functools.lru_cache(maxsize=None)
def _untyped():
    from strategies import untyped_values

    return untyped_values(json_like=True, enums=())


def _class(module: str, name: str) -> Any:
    """``module.name`` if the installed release has it, else None (an older release lacks a class the newer ranges name)."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


@functools.lru_cache(maxsize=None)
def _type_overrides() -> Dict[type, Any]:
    import hypothesis.strategies as st

    valid = _valid_fields()
    overrides: Dict[type, Any] = {}
    lora = _class("vllm.lora.request", "LoRARequest")
    if lora is not None:
        # Every field given: left at its default, lora_path is "", which __post_init__ refuses (a finding, not a draw).
        overrides[lora] = st.builds(lora, **_existing(lora, valid["LoRARequest"]))
    structured = _class("vllm.sampling_params", "StructuredOutputsParams")
    if structured is not None:
        overrides[structured] = _structured_outputs()
    mm_item = _class("vllm.multimodal.inputs", "MultiModalKwargsItem")
    if mm_item is not None:
        overrides[mm_item] = _mm_kwargs_items()
    result = _class("vllm.v1.serial_utils", "UtilityResult")
    if result is not None:
        overrides[result] = st.builds(result, _untyped())
    pooling = dict(valid["PoolingParams"])
    output_kind = _class("vllm.sampling_params", "RequestOutputKind")
    if output_kind is not None:
        pooling["output_kind"] = st.just(output_kind.FINAL_ONLY)
    # Innermost first: each validated class is drawn with the strategies of those it contains.
    for module, name, fields in (
        ("vllm.sampling_params", "RepetitionDetectionParams", valid["RepetitionDetectionParams"]),
        ("vllm.pooling_params", "LateChunkingParams", valid["LateChunkingParams"]),
        ("vllm.pooling_params", "PoolingParams", pooling),
        ("vllm.sampling_params", "SamplingParams", valid["SamplingParams"]),
    ):
        cls = _class(module, name)
        if cls is not None:
            overrides[cls] = _validated(cls, fields, overrides)
    classes = _classes_by_name()
    for name, fields in _wire_ranges().items():
        if name in classes:  # a class this release has
            overrides[classes[name]] = _validated(classes[name], fields, overrides)
    return overrides


def _existing(cls: type, fields: Mapping[str, Any]) -> Dict[str, Any]:
    """The entries of ``fields`` that name a field ``cls`` has in the installed release (its constructor takes them)."""
    from reference_codec.type_tree import struct_info

    names = {f.name for f in struct_info(cls).fields}
    return {name: strategy for name, strategy in fields.items() if name in names}


def _validation_errors():
    """What a validated class's constructor raises for a combination the ranges above still allow."""
    from vllm.exceptions import VLLMValidationError

    return (VLLMValidationError, ValueError, TypeError, AssertionError)


#: Strategies by field name or by type, as ``strategies.from_struct`` takes them.
_Overrides = Dict[Union[str, type], Any]

#: Draws each validated class's constructor refused, by class (for the test that keeps the ranges honest).
REFUSED: Dict[type, int] = {}


def _validated(cls: type, fields: Mapping[str, Any], types: Mapping[type, Any]):
    """Instances of ``cls`` drawn with ``fields`` and the engine's type strategies; a draw its
    ``__post_init__`` still refuses is rejected (rare: the ranges keep to what it accepts)."""
    import hypothesis
    import hypothesis.strategies as st

    from strategies import from_struct

    overrides: _Overrides = {name: s for name, s in _existing(cls, fields).items()}
    overrides.update((t, s) for t, s in types.items() if t is not cls)
    inner = from_struct(cls, overrides, untyped=_untyped())  # no registry, no batch field: the generic defaults

    @st.composite
    def draw_valid(draw):
        try:
            return draw(inner)
        except _validation_errors() as exc:
            REFUSED[cls] = REFUSED.get(cls, 0) + 1
            hypothesis.event(f"{cls.__name__} refused a draw: {type(exc).__name__}")
            hypothesis.reject()

    return draw_valid()


@functools.lru_cache(maxsize=None)
def message_strategy(cls: type):
    """Valid vLLM messages of type ``cls``: the generic builder with vLLM's meaning (module docstring)."""
    from strategies import from_struct

    types = _type_overrides()
    if cls in types:  # a root drawn within its ranges
        return types[cls]
    overrides: _Overrides = {t: s for t, s in types.items()}  # a copy: the cached table stays as built
    return from_struct(cls, overrides, untyped=_untyped())  # no registry, no batch field: the generic defaults

