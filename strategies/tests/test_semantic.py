"""Semantic strategies produce their edge cases, in standalone form and inside messages."""

from __future__ import annotations

import math
from array import array

import msgspec
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis.errors import InvalidArgument

import strategies
from reference_codec import EncodeError, ReferenceCodec
from reference_codec.schema import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    BaseBatchReq,
    BatchEmbeddingOutput,
    BatchStrOutput,
    BatchTokenIDOutput,
    FlushCacheReqOutput,
    Modality,
    MultimodalProcessorOutput,
    PickleWrapper,
    SamplingParams,
    TokenizedGenerateReqInput,
)

from ._helpers import generates, walk

_TOKEN_IDS = BatchTokenIDOutput
_OUTPUTS = [BatchTokenIDOutput, BatchStrOutput]
_FAMILIES = ("token_logprobs", "top_logprobs", "token_ids_logprobs")


def _floats_only(row) -> bool:
    return all(type(x) is float for x in row)


def test_logprob_rows_include_leading_none():
    def labels(msg):
        rows = msg.input_token_logprobs_val or []
        return {"leading None"} if any(r and len(r) > 1 and r[0] is None and _floats_only(r[1:]) for r in rows) else set()

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {"leading None"})


def test_logprob_rows_without_leading_none_for_multi_item_scoring():
    def labels(msg):
        rows = msg.input_token_logprobs_val or []
        return {"no leading None"} if any(r and r[0] is not None for r in rows) else set()

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {"no leading None"})


def test_logprob_fields_include_empty_rows_and_the_empty_streaming_chunk():
    def labels(msg):
        out = set()
        for name in ("output_token_logprobs_val", "output_top_logprobs_val"):
            value = getattr(msg, name)
            if value == [[]]:
                out.add("[[]]")
            if value and [] in value and len(value) > 1:
                out.add("[] row in a batch")
            if value is None:
                out.add("field None")
            if value and None in value:
                out.add("None row")
        return out

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {"[[]]", "[] row in a batch", "field None", "None row"})


def test_top_logprob_rows_are_two_levels_with_k_varying_between_requests():
    def labels(msg):
        out = set()
        for name in ("output_top_logprobs_val", "output_token_ids_logprobs_val", "input_token_ids_logprobs_val"):
            rows = [r for r in getattr(msg, name) or [] if r]
            widths = {len(p) for r in rows for p in r if isinstance(p, list)}
            if len(widths) > 1 and all(isinstance(p, list) and _floats_only(p) for r in rows for p in r if p is not None):
                out.add(f"{name} k varies")
        return out

    generates(
        strategies.reference_struct(_TOKEN_IDS),
        labels,
        {"output_top_logprobs_val k varies", "output_token_ids_logprobs_val k varies", "input_token_ids_logprobs_val k varies"},
    )


def _skeleton(value):
    return [_skeleton(v) for v in value] if isinstance(value, list) else 0


@pytest.mark.parametrize("cls", _OUTPUTS, ids=lambda c: c.__name__)
def test_logprob_idx_fields_have_exactly_the_shape_of_their_val_fields(cls):
    @given(strategies.reference_struct(cls))
    def check(msg):
        for side in ("input", "output"):
            for family in _FAMILIES:
                val = getattr(msg, f"{side}_{family}_val")
                idx = getattr(msg, f"{side}_{family}_idx")
                assert (val is None) == (idx is None), f"{side}_{family}"
                assert _skeleton(val) == _skeleton(idx), f"{side}_{family}: {val!r:.200} vs {idx!r:.200}"
        flat_val, flat_idx = msg.input_top_logprobs_val_flat, msg.input_top_logprobs_idx_flat
        if flat_val is not None and flat_idx is not None and len(flat_val) == len(flat_idx):
            for v, i in zip(flat_val, flat_idx):
                if v is not None and i is not None and v.dtype == np.float32 and i.dtype == np.int64:
                    assert v.shape == i.shape

    check()


def test_logprob_values_include_nan_negative_zero_and_minus_infinity():
    def labels(msg):
        out = set()
        for v in walk(msg.output_token_logprobs_val or []):
            if type(v) is float:
                if math.isnan(v):
                    out.add("nan")
                elif v == 0 and math.copysign(1, v) < 0:
                    out.add("-0.0")
                elif v == -math.inf:
                    out.add("-inf")
        return out

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {"nan", "-0.0", "-inf"})


@given(strategies.logprob_rows(kind="top", values=False, batch_size=3))
def test_standalone_logprob_rows_honour_kind_values_and_batch_size(rows):
    if rows is not None:
        assert len(rows) == 3
        for row in rows:
            for position in row or []:
                assert position is None or all(type(t) is int for t in position)


def _finish_shape(reason) -> str:
    if not isinstance(reason, dict) or reason.get("type") not in ("stop", "length", "abort"):
        return "other"
    if reason["type"] == "length":
        return "length" if type(reason.get("length")) is int else "other"
    if reason["type"] == "abort":
        return "abort, status None" if reason.get("status_code") is None else "abort, status"
    matched = reason.get("matched")
    if isinstance(matched, list):
        return "stop, token list" if matched else "stop, empty token list"
    if isinstance(matched, str):
        return "stop, str" if matched else "stop, empty str"
    return "stop, token"


def test_finish_reasons_take_every_to_json_shape():
    shapes = {"length", "abort, status None", "abort, status", "stop, token list", "stop, empty token list", "stop, str", "stop, empty str", "stop, token"}
    generates(strategies.finish_reasons(), lambda r: {_finish_shape(r)}, shapes)


def test_finish_reasons_in_batches_take_the_main_shapes_and_none():
    def labels(msg):
        return {_finish_shape(r) if r is not None else "None" for r in msg.finished_reasons}

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {"None", "length", "abort, status", "stop, token", "stop, str"})


def test_stop_strings_include_the_empty_string_alone_and_in_lists():
    def labels(params: SamplingParams):
        out = set()
        for stop in (params.stop, params.stop_strs):
            if stop == "":
                out.add("''")
            if isinstance(stop, list) and "" in stop:
                out.add("'' in a list")
        return out

    generates(strategies.reference_struct(SamplingParams), labels, {"''", "'' in a list"})


def test_token_ids_are_int64_arrays_reaching_the_int64_limits():
    def labels(msg):
        out = set()
        for ids in msg.decode_ids:
            if type(ids) is array and ids.typecode == "q":
                out.update(f"limit {x}" for x in ids if x in (INT64_MAX, INT64_MIN))
        return out

    generates(strategies.reference_struct(_TOKEN_IDS), labels, {f"limit {INT64_MAX}", f"limit {INT64_MIN}"})


def _mm_labels(out: MultimodalProcessorOutput) -> set:
    labels = set()
    for item in out.mm_items:
        features = item.feature if isinstance(item.feature, list) else [item.feature]
        for feature in features:
            if isinstance(feature, torch.Tensor):
                labels.add(f"{item.modality.name} tensor {feature.dtype}")
            elif isinstance(feature, np.ndarray):
                labels.add(f"{item.modality.name} ndarray {feature.dtype}")
        if isinstance(item.feature, list) and item.feature:
            labels.add("per-item list")
        if item.offsets and all(type(o) is tuple for o in item.offsets):
            labels.add("offsets as tuples")
        if item.hash is not None and item.hash > INT64_MAX:
            labels.add("hash past int64")
        if item.hash is not None and item.pad_value == item.hash % (1 << 30):
            labels.add("pad value from hash")
        if isinstance(item.precomputed_embeddings, (torch.Tensor, np.ndarray)):
            labels.add("precomputed embeddings")
        if isinstance(item.model_specific_data.get("image_grid_thw"), torch.Tensor):
            labels.add("grid")
        if isinstance(item.model_specific_data.get("image_sizes"), list):
            labels.add("sizes")
    return labels


def test_multimodal_items_cover_every_modality_with_tensor_and_ndarray_features():
    expected = {f"{m.name} tensor torch.{d}" for m in Modality for d in ("float16", "bfloat16", "float32", "uint8")}
    expected |= {f"{m.name} ndarray {d}" for m in Modality for d in ("float16", "float32", "uint8")}
    expected |= {"per-item list", "offsets as tuples", "hash past int64", "pad value from hash", "precomputed embeddings", "grid", "sizes"}
    generates(strategies.reference_struct(MultimodalProcessorOutput), _mm_labels, expected, max_examples=1500)


def test_routed_experts_are_int32_token_layer_top_k_tensors_often_offset_views():
    def labels(t: torch.Tensor):
        assert t.dtype is torch.int32 and t.dim() == 3 and t.shape[1] >= 1 and t.shape[2] >= 1
        return {"offset view"} if t.storage_offset() > 0 else {"fresh"}

    generates(strategies.routed_experts(), labels, {"offset view", "fresh"})


def test_routed_experts_in_str_outputs_are_base64_text():
    def labels(msg):
        texts = [r for r in msg.routed_experts or [] if isinstance(r, str) and r]
        return {"base64"} if texts else set()

    generates(strategies.reference_struct(BatchStrOutput), labels, {"base64"})


def test_pooled_hidden_states_are_stacked_or_per_request_with_none():
    def labels(msg: BatchEmbeddingOutput):
        n, phs = len(msg.embeddings), msg.pooled_hidden_states
        if phs is None or n < 2:
            return set()
        if len(phs) == 1 and isinstance(phs[0], torch.Tensor) and phs[0].dim() == 2 and phs[0].shape[0] == n:
            return {"stacked"}
        if len(phs) == n and None in phs and any(isinstance(p, torch.Tensor) for p in phs):
            return {"per request with None"}
        return set()

    generates(strategies.reference_struct(BatchEmbeddingOutput), labels, {"stacked", "per request with None"})


def test_embeddings_cover_every_arm_of_their_union():
    def labels(msg: BatchEmbeddingOutput):
        out = set()
        for e in msg.embeddings:
            if type(e) is float:
                out.add("score")
            elif type(e) is dict:
                out.add("sparse")
            elif type(e) is list and e and all(type(x) is float for x in e):
                out.add("dense")
            elif type(e) is list and e and all(type(x) is list for x in e):
                out.add("multi-vector")
            elif type(e) is list and {type(x) for x in e} == {float, list}:
                out.add("mixed")
        return out

    generates(strategies.reference_struct(BatchEmbeddingOutput), labels, {"score", "sparse", "dense", "multi-vector", "mixed"})


@given(strategies.hidden_states(batch_size=4))
def test_hidden_state_vectors_of_one_request_share_one_width(states):
    assert len(states) == 4
    for request in states:
        widths = {len(v) for chunk in request or [] for v in chunk if isinstance(v, list)}
        assert len(widths) <= 1


_BATCH_TYPES = [cls for cls in strategies.message_types(BaseBatchReq)]


def _parallel_lengths(msg) -> dict:
    info = msgspec.inspect.type_info(type(msg))
    out = {}
    for f in info.fields:
        value = getattr(msg, f.name)
        t = f.type
        if isinstance(t, msgspec.inspect.UnionType):
            arms = [a for a in t.types if not isinstance(a, msgspec.inspect.NoneType)]
            t = arms[0] if len(arms) == 1 else t
        if isinstance(t, msgspec.inspect.ListType) and value is not None:
            out[f.name] = len(value)
    return out


@pytest.mark.parametrize("cls", _BATCH_TYPES, ids=lambda c: c.__name__)
def test_batches_of_size_0_1_and_large_keep_every_parallel_list_as_long_as_rids(cls):
    def labels(msg):
        lengths = _parallel_lengths(msg)
        n = len(msg.rids) if msg.rids is not None else max(lengths.values(), default=0)
        for name, length in lengths.items():
            if name == "pooled_hidden_states" and length == 1 and n > 1:
                continue  # SGLang's stacked form: one (N, hidden) tensor
            assert length == n, f"{cls.__name__}.{name} has {length} entries for a batch of {n}"
        items = getattr(getattr(msg, "time_stats", None), "items", None)
        assert items is None or len(items) == n, f"{cls.__name__}.time_stats.items has {len(items)} for {n}"
        for key, values in (getattr(msg, "customized_info", None) or {}).items():
            assert len(values) == n, f"{cls.__name__}.customized_info[{key!r}] has {len(values)} for {n}"
        if msg.rids is None:
            return set()
        return {"0" if n == 0 else "1" if n == 1 else "large" if n > strategies.batches.SMALL_BATCH_MAX else "small"}

    generates(strategies.reference_struct(cls), labels, {"0", "1", "small", "large"})


def test_time_stats_carry_128_bit_trace_ids():
    def labels(msg: TokenizedGenerateReqInput):
        trace = getattr(msg.time_stats, "trace", None)
        return {"trace id past 64 bits"} if trace is not None and abs(trace.trace_id) > UINT64_MAX else set()

    generates(strategies.reference_struct(TokenizedGenerateReqInput), labels, {"trace id past 64 bits"})


@given(strategies.reference_struct(TokenizedGenerateReqInput))
def test_pickle_wrappers_never_appear_by_default(msg):
    assert not any(isinstance(v, PickleWrapper) for v in walk(msg))


def test_pickle_wrappers_appear_when_opted_in_and_unpickle_to_the_other_arm():
    codec = ReferenceCodec(allow_pickle=True)

    def labels(msg):
        if isinstance(msg.time_stats, PickleWrapper):
            back = codec.decode(codec.encode(msg))
            assert type(back.time_stats).__name__ in ("APIServerReqTimeStats", "DPControllerReqTimeStats")
            return {"wrapped"}
        return set()

    generates(strategies.reference_struct(TokenizedGenerateReqInput, pickle_wrappers=True), labels, {"wrapped"})


def test_lone_surrogates_appear_only_when_opted_in_and_do_not_encode():
    codec = ReferenceCodec()

    def labels(msg):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in msg.message):
            with pytest.raises(EncodeError):
                codec.encode(msg)
            return {"surrogate"}
        return set()

    generates(strategies.reference_struct(FlushCacheReqOutput, surrogates=True), labels, {"surrogate"})


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: strategies.logprob_rows(kind="middle"), "kind"),
        (lambda: strategies.logprob_rows(batch_size=-1), "batch_size"),
        (lambda: strategies.mm_features("SMELL"), "modality"),
        (lambda: strategies.pooled_hidden_states(-2), "batch_size"),
        (lambda: strategies.routed_experts(as_text="yes"), "as_text"),
        (lambda: strategies.SemanticRegistry().register("", lambda ctx: None), "pattern"),
        (lambda: strategies.SemanticRegistry().register("x", 3), "factory"),
    ],
)
def test_semantic_arguments_are_validated_at_call_time_naming_the_argument(call, argument):
    with pytest.raises(InvalidArgument, match=argument):
        call()


def test_every_semantic_factory_is_registered_by_name():
    patterns = set(strategies.REFERENCE_REGISTRY.patterns())
    assert {"*_logprobs_val", "*_logprobs_idx", "finished_reasons", "feature", "pooled_hidden_states", "embeddings"} <= patterns
