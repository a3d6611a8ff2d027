"""Semantic strategies: what fields mean, beyond what their types say.

Each public function here is a standalone strategy; :func:`register_defaults`
registers each ``_factory`` below in a registry under the field names (or
globs) it gives meaning to (importing this module registers nothing; the
reference schema's filled registry is :data:`strategies.reference.REGISTRY`). A factory first checks that the field's
inspected type has the shape it expects and declines (returns ``None``)
otherwise, so a same-named field of another implementation with a different
type falls back to type-driven generation.

Factories draw what an engine sends nine times in ten and any value of the
declared type the tenth time (:meth:`FieldContext.mostly`): a peer in another
language may send anything the schema admits, and the coverage report checks
that every ``None``, union arm and empty collection the type allows does
occur. Fields that must agree with a sibling (``*_logprobs_idx`` with
``*_logprobs_val``) are derived from it exactly instead.

Registered fields
=================

``*_logprobs_val`` / ``*_logprobs_idx``
    Token rows (``[None, -0.18, -2.94]`` for input logprobs, plain rows for
    output, rows without the leading None for multi-item scoring), top-k and
    token-id rows (two levels, k varying per request and occasionally per
    position), ``[]`` rows, ``[[]]`` streaming chunks, ``None`` rows and a
    ``None`` field. The ``_idx`` field has exactly the ``_val`` field's shape.
``*_logprobs_val_flat`` / ``*_logprobs_idx_flat`` / ``*_flat_null_prefix``
    Per-request ``(positions, k)`` float32/int64 ndarrays of equal shape.
``placeholder_tokens_idx`` / ``placeholder_tokens_val``
    Equal shapes.
``finished_reasons`` / ``finished_reason`` / ``finish_reason``
    ``BaseFinishReason.to_json()`` dicts (see :func:`finish_reasons`).
``stop`` / ``stop_strs``
    A stop string, a list of them, or None; ``""`` included.
``decode_ids`` / ``output_ids`` / ``input_ids``
    ``array('q')`` of token ids, with values near the int64 limits.
``feature`` / ``precomputed_embeddings`` / ``model_specific_data`` / ``offsets`` / ``pad_value`` / ``pad_values`` / ``mrope_positions`` / ``mrope_position_delta``
    Multimodal processor outputs, by modality (see :func:`mm_features`).
``output_hidden_states``
    Per-request chunks of hidden vectors of one width (see :func:`hidden_states`).
``routed_experts`` / ``indexer_topk``
    ``(token, layer, top_k)`` int32 tensors, or their base64 text.
``pooled_hidden_states``
    One stacked tensor in a one-element list, or a per-request list with None entries.
``embeddings``
    Every arm of ``BatchEmbeddingOutput.embeddings`` (see :func:`embeddings`).
``input_embeds``
    Rows of one width.
``time_stats``
    In a batch, a ``BatchReqTimeStats`` with one entry per request.
``customized_info``
    Keys mapping to per-request lists.
"""

from __future__ import annotations

import base64
import copy
import functools
import math
import re
from array import array
from typing import Any, List, Optional, Tuple

import hypothesis.strategies as st
import numpy as np
import torch
from msgspec import inspect as mi

from reference_codec.schema import ENUM_TYPES, INT64_MAX, INT64_MIN
from reference_codec.type_tree import STRUCT_TYPES, children, struct_info, unwrap

from ._draws import choice, exact_binary, ints, lists_of, one_in, or_none, union
from ._public import check_choice, check_int, check_optional_bool, named, named_composite
from .batches import DISTINCT_REQUESTS, repeat_rows
from .builder import FieldContext, union_arms
from .registry import SemanticRegistry
from .tensors import ndarrays, tensors, visible_devices
from .untyped import untyped_values
from .values import SPECIAL_FLOATS, edge_floats, integers_between, texts

__all__ = [
    "token_ids",
    "token_id_arrays",
    "logprob_floats",
    "logprob_rows",
    "finish_reasons",
    "stop_strings",
    "mm_features",
    "model_specific_data",
    "hidden_states",
    "routed_experts",
    "pooled_hidden_states",
    "embeddings",
    "register_defaults",
    "type_signature",
]


_BOOLS = st.booleans()
_NONE = st.none()
# The reference schema's untyped values: its enums among the leaves.
_UNTYPED = untyped_values(enums=ENUM_TYPES)


def _rare(draw, n: int = 8) -> bool:
    """True about once in ``n`` draws; shrinks toward False."""
    return draw(one_in(n))


# --- type shapes --------------------------------------------------------------


def type_signature(t: mi.Type) -> str:
    """A compact structural spelling of an inspected type: ``O[L[O[L[O[float]]]]]``.

    ``O[x]`` is Optional, ``L`` list, ``D[k,v]`` dict, ``T`` fixed tuple, ``V``
    variadic tuple, ``a|b`` a union; leaves are ``int``, ``float``, ``str``,
    ``bool``, ``bytes``, ``any`` or a class name (``Tensor``, ``ndarray``,
    ``array``, ``object``). Factories compare it to decide whether a field of
    a given name has the shape they expect.
    """
    t = unwrap(t)
    if isinstance(t, mi.UnionType):
        has_none, arms = union_arms(t, pickle_wrappers=True)
        inner = "|".join(type_signature(a) for a in arms)
        return f"O[{inner}]" if has_none else inner
    if isinstance(t, mi.ListType):
        return f"L[{type_signature(t.item_type)}]"
    if isinstance(t, mi.VarTupleType):
        return f"V[{type_signature(t.item_type)}]"
    if isinstance(t, mi.TupleType):
        return f"T[{','.join(type_signature(x) for x in t.item_types)}]"
    if isinstance(t, mi.DictType):
        return f"D[{type_signature(t.key_type)},{type_signature(t.value_type)}]"
    if isinstance(t, mi.CustomType):
        return t.cls.__name__
    if isinstance(t, (mi.StructType, mi.EnumType)):
        return t.cls.__name__
    names = {
        mi.IntType: "int", mi.FloatType: "float", mi.StrType: "str", mi.BoolType: "bool",
        mi.BytesType: "bytes", mi.AnyType: "any", mi.NoneType: "None", mi.LiteralType: "lit",
    }
    return names.get(type(t), type(t).__name__)


def _sig(ctx: FieldContext) -> str:
    return type_signature(ctx.type)


def _shaped(
    ctx: FieldContext, leaf: st.SearchStrategy, t: Optional[mi.Type] = None, outer: bool = True, one_in: int = 10
):
    """A strategy for ctx's type with ``leaf`` for its innermost values.

    Optional and List levels of the type are kept (the outermost list
    per-request in a batch); each innermost value is ``leaf``, except once in
    ``one_in`` draws any value of its declared type, so that an odd entry
    (an empty finish-reason dict) can sit among realistic ones.
    """
    t = ctx.type if t is None else t
    if isinstance(t, mi.UnionType):
        has_none, arms = union_arms(t)
        if len(arms) == 1:
            inner = _shaped(ctx, leaf, arms[0], outer, one_in)
            if not has_none:
                return inner
            return ctx.with_none(inner) if outer else or_none(inner)
    if isinstance(t, mi.ListType):
        items = _shaped(ctx, leaf, t.item_type, False, one_in)
        return ctx.per_request(items) if outer and ctx.parallel else lists_of(items, 0, 4)
    return ctx.mostly(leaf, t, one_in=one_in)


def _shape_of(value: Any) -> Any:
    if isinstance(value, list):
        return [_shape_of(v) for v in value]
    if value is None:
        return None
    return ()


def _leaf_is_scalar(t: mi.Type) -> bool:
    """Whether ``t`` is one value a leaf strategy can stand for (a struct counts), not a container or union."""
    return isinstance(unwrap(t), STRUCT_TYPES) or not children(t)


@named_composite("filled_like")
def _filled_like(draw, template: Any, t: mi.Type, leaf: st.SearchStrategy, outer: bool = True):
    """A value of type ``t`` with ``template``'s nesting shape and leaves from ``leaf``.

    ``None`` where the template has a container-level ``None``; where it has a
    ``None`` leaf, a leaf or ``None`` (SGLang writes a token id under a
    leading ``None`` logprob). Past the first ``DISTINCT_REQUESTS`` rows of the
    outermost list, rows shaped like an earlier row reuse a copy of it.
    """
    return _fill(draw, template, t, leaf, outer)


@functools.lru_cache(maxsize=None)
def _value_or_none(leaf: st.SearchStrategy) -> st.SearchStrategy:
    return union((leaf, st.none()))


def _fill(draw, template, t, leaf, outer):
    if isinstance(t, mi.UnionType):
        has_none, arms = union_arms(t)
        if template is None:
            if has_none and arms and _leaf_is_scalar(arms[0]):
                return draw(_value_or_none(leaf))
            return None
        return _fill(draw, template, arms[0], leaf, outer)
    if isinstance(t, mi.ListType):
        if not isinstance(template, list):
            return []
        out: List[Any] = []
        shapes = [_shape_of(x) for x in template] if outer and len(template) > DISTINCT_REQUESTS else None
        for i, x in enumerate(template):
            if shapes is not None and i >= DISTINCT_REQUESTS and shapes[i] == shapes[i % DISTINCT_REQUESTS]:
                out.append(copy.deepcopy(out[i % DISTINCT_REQUESTS]))
            else:
                out.append(_fill(draw, x, t.item_type, leaf, False))
        return out
    return draw(leaf)


# --- token ids, logprobs --------------------------------------------------------

_TOKEN_IDS_TREE = st.one_of(
    st.integers(0, 262_143),
    st.sampled_from([0, 1, 2, 151_643, 2**31 - 1, 2**31, 2**32, INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, -1]),
    integers_between(INT64_MIN, INT64_MAX),
)


_TOKEN_IDS = named("token_ids", _TOKEN_IDS_TREE)


def token_ids() -> st.SearchStrategy[int]:
    """Token ids: vocabulary-sized mostly, sometimes at the int64 limits or negative. Shrinks toward 0."""
    return _TOKEN_IDS


@named_composite("token_id_arrays")
def _token_id_arrays(draw, max_size: int = 8) -> array:
    return array("q", draw(lists_of(_TOKEN_IDS, 0, max_size)))


def token_id_arrays(*, max_size: int = 8) -> st.SearchStrategy[array]:
    """``array('q')`` of :func:`token_ids`, as SGLang sends ``decode_ids``. Shrinks toward ``array('q')``."""
    check_int(max_size, "max_size", min_value=0)
    return _token_id_arrays() if max_size == 8 else _token_id_arrays(max_size=max_size)


_LOGPROBS = named(
    "logprob_floats",
    st.one_of(
        st.floats(max_value=0.0, allow_nan=False),
        st.sampled_from([-0.18, -2.94, -0.0, 0.0, -math.inf, math.nan, -5e-324, -1e-45, -1e300]),
    ),
)


def logprob_floats() -> st.SearchStrategy[float]:
    """Log-probabilities: non-positive floats, plus ``-inf``, NaN, ``-0.0`` and subnormals. Shrinks toward 0.0."""
    return _LOGPROBS


def _logprob_levels(t: mi.Type) -> Optional[Tuple[int, str]]:
    """(2, leaf) for token rows ``O[L[O[L[O[leaf]]]]]``, (3, leaf) for top-k rows
    ``O[L[O[L[O[L[leaf]]]]]]``; None for any other shape."""
    sig = type_signature(t)
    m = re.fullmatch(r"(?:O\[)?L\[O\[L\[O\[(L\[)?(float|int)\]?\]\]\]\]\]?", sig)
    if not m or sig.count("[") != sig.count("]"):
        return None
    return (3 if m.group(1) else 2), m.group(2)


@named_composite("logprob_rows")
def _logprob_rows(draw, levels: int, leaf: st.SearchStrategy, size: Optional[int], leading_none: bool, optional: bool):
    if optional and _rare(draw, 4):
        return None  # no request in the batch asked for logprobs
    n = draw(ints(0, 4)) if size is None else size
    distinct = min(n, DISTINCT_REQUESTS)
    rows = [_logprob_row(draw, levels, leaf, leading_none) for _ in range(distinct)]
    return repeat_rows(rows, n)


_cached_logprob_rows = functools.lru_cache(maxsize=None)(_logprob_rows)


def _logprob_row(draw, levels: int, leaf: st.SearchStrategy, leading_none: bool):
    if _rare(draw, 6):
        return None
    length = draw(ints(0, 4))
    lead = leading_none and length > 0 and draw(ints(0, 2)) != 0  # else a multi-item scoring row
    if levels == 2:
        return [None if (i == 0 and lead) or _rare(draw, 16) else draw(leaf) for i in range(length)]
    k = draw(ints(0, 3))
    row: List[Any] = []
    for i in range(length):
        if (i == 0 and lead) or _rare(draw, 16):  # a position without logprobs
            row.append(None)
            continue
        width = draw(ints(0, 3)) if _rare(draw, 8) else k  # ragged: k changed mid-row
        row.append([draw(leaf) for _ in range(width)])
    return row


def logprob_rows(
    *,
    kind: str = "token",
    values: bool = True,
    batch_size: Optional[int] = None,
    leading_none: bool = True,
    optional: bool = True,
) -> st.SearchStrategy:
    """One logprob field of a batch: ``None`` or a list of per-request rows.

    ``kind="token"`` rows are ``[lp, lp, ...]``; ``kind="top"`` rows are
    ``[[lp] * k, ...]`` (top-k and token-id logprobs), with k varying per
    request and occasionally within a row. ``values`` chooses logprob floats
    (``*_val``) or token ids (``*_idx``). With ``leading_none`` most non-empty
    rows start with ``None`` (input logprobs), the rest do not (multi-item
    scoring). Rows may be ``None`` or ``[]``; a batch of one empty row is the
    ``[[]]`` streaming chunk. ``batch_size=None`` draws 0 to 4 rows.

    Shrinks toward ``None``, then toward fewer, shorter rows and k = 0.
    """
    check_choice(kind, "kind", ("token", "top"))
    check_optional_bool(values, "values")
    if batch_size is not None:
        check_int(batch_size, "batch_size", min_value=0)
    check_optional_bool(leading_none, "leading_none")
    check_optional_bool(optional, "optional")
    rows = _cached_logprob_rows(
        levels=2 if kind == "token" else 3,
        leaf=_LOGPROBS if values else _TOKEN_IDS,
        size=batch_size,
        leading_none=bool(leading_none),
        optional=bool(optional),
    )
    given = dict(kind=kind, values=values, batch_size=batch_size, leading_none=leading_none, optional=optional)
    defaults = dict(kind="token", values=True, batch_size=None, leading_none=True, optional=True)
    return named("logprob_rows", rows, **{k: v for k, v in given.items() if v != defaults[k]})


def _partner_name(name: str) -> Optional[str]:
    for a, b in (("_val", "_idx"), ("_idx", "_val")):
        if a in name:
            head, _, tail = name.rpartition(a)
            return f"{head}{b}{tail}"
    return None


def _logprobs_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    shape = _logprob_levels(ctx.type)
    if shape is None:
        return None
    levels, leaf_kind = shape
    leaf = _LOGPROBS if leaf_kind == "float" else _TOKEN_IDS
    partner_name = _partner_name(ctx.name)
    if partner_name is not None and partner_name in ctx.values:
        partner = ctx.values[partner_name]
        return _NONE if partner is None else _filled_like(template=partner, t=ctx.type, leaf=leaf)
    rows = _cached_logprob_rows(
        levels=levels,
        leaf=leaf,
        size=ctx.batch_size if ctx.parallel else None,
        leading_none=ctx.name.startswith("input_"),
        optional=ctx.optional,
    )
    return ctx.mostly(rows)


def _pair_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    """``placeholder_tokens_idx``/``_val``: lists of ints of equal shapes."""
    if _sig(ctx) != "O[L[O[L[int]]]]":
        return None
    partner_name = _partner_name(ctx.name)
    if partner_name is not None and partner_name in ctx.values:
        partner = ctx.values[partner_name]
        return _NONE if partner is None else _filled_like(template=partner, t=ctx.type, leaf=_TOKEN_IDS)
    return ctx.generic()


def _flat_logprobs_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) != "O[L[O[ndarray]]]":
        return None
    dtype = "<f4" if "_val" in ctx.name else "<i8"
    partner_name = _partner_name(ctx.name)
    if partner_name is not None and partner_name in ctx.values:
        partner = ctx.values[partner_name]
        return _NONE if partner is None else _flat_like(template=partner, dtype=dtype)
    row = ndarrays(dtypes=[dtype], shape=_FLAT_SHAPES, layouts=["contiguous", "sliced"])
    return ctx.mostly(_shaped(ctx, row))


_FLAT_SHAPES = st.tuples(st.integers(0, 4), st.integers(0, 3))


@named_composite("flat_like")
def _flat_like(draw, template: list, dtype: str):
    """Per request, ``None`` where ``template`` has None, else an array of its shape."""
    out: List[Any] = []
    for i, partner in enumerate(template):
        earlier = i - DISTINCT_REQUESTS if i >= DISTINCT_REQUESTS else None
        if partner is None:
            out.append(None)
        elif earlier is not None and out[earlier] is not None and template[earlier].shape == partner.shape:
            out.append(copy.deepcopy(out[earlier]))  # the batch repeats its first rows
        else:
            out.append(draw(ndarrays(dtypes=[dtype], shape=tuple(partner.shape), layouts=["contiguous"])))
    return out


def _null_prefix_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) != "O[L[O[int]]]":
        return None
    return ctx.mostly(_shaped(ctx, ints(0, 1)))


# --- finish reasons and stop strings ------------------------------------------

_ABORT_MESSAGES = st.one_of(st.just("Aborted"), texts(max_size=24))
_STATUS = union((st.none(), st.sampled_from([400, 408, 429, 500, 503]), integers_between(INT64_MIN, INT64_MAX)))
_ERR_TYPE = union((st.none(), st.sampled_from(["BadRequestError", "InternalServerError"]), texts(max_size=12)))
_STOP_STRINGS = named(
    "stop_strings",
    st.one_of(
        st.just(""),
        st.sampled_from(["\n", "</s>", "<|im_end|>", "<|endoftext|>", "###", "🙂", "e\u0301", " "]),
        texts(max_size=8),
    ),
)
_TOKEN_ID_LISTS = st.lists(_TOKEN_IDS, min_size=1, max_size=3)


@named_composite("finish_reasons")
def _finish_reasons(draw) -> dict:
    kind = draw(ints(0, 5))
    if kind == 0:
        return {"type": "length", "length": draw(integers_between(0, INT64_MAX))}
    if kind == 1:
        return {"type": "stop", "matched": draw(_TOKEN_IDS)}
    if kind == 2:
        return {"type": "stop", "matched": draw(_TOKEN_ID_LISTS)}
    if kind == 3:
        return {"type": "stop", "matched": []}
    if kind == 4:
        return {"type": "stop", "matched": draw(_STOP_STRINGS)}
    return {"type": "abort", "message": draw(_ABORT_MESSAGES), "status_code": draw(_STATUS), "err_type": draw(_ERR_TYPE)}


_FINISH_REASONS = _finish_reasons()


def finish_reasons() -> st.SearchStrategy[dict]:
    """``BaseFinishReason.to_json()`` dicts, every shape SGLang writes.

    ``{"type": "length", "length": int}``; ``{"type": "stop", "matched": x}``
    with x a token id, a list of token ids (sometimes ``[]``) or a stop string
    (sometimes ``""``); ``{"type": "abort", "message": str, "status_code":
    int | None, "err_type": str | None}``. Shrinks toward a length reason of 0.
    """
    return _FINISH_REASONS


def stop_strings() -> st.SearchStrategy[str]:
    """Stop strings: ``""``, newlines, special tokens, emoji, combining text. Shrinks toward ``""``."""
    return _STOP_STRINGS


def _finish_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if re.fullmatch(r"(O\[)?(L\[)?O\[(D\[str,.*\]|object|any)\](\])?\]?", _sig(ctx)) is None:
        return None
    # one entry in four from the declared type: odd dicts ({}, unknown keys)
    # are what a hand-written peer is most likely to get wrong
    return ctx.mostly(_shaped(ctx, _FINISH_REASONS, one_in=4))


def _stop_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[str|L[str]]", "str|L[str]"):
        return None
    value = st.one_of(_STOP_STRINGS, st.lists(_STOP_STRINGS, max_size=4))
    return ctx.mostly(ctx.with_none(value))


def _token_array_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("array", "O[array]", "L[array]", "O[L[array]]"):
        return None
    return ctx.mostly(_shaped(ctx, _token_id_arrays(max_size=8)))


# --- multimodal -----------------------------------------------------------------

_FEATURE_TORCH_DTYPES = ("float32", "float16", "bfloat16", "uint8")
_FEATURE_NUMPY_DTYPES = ("<f4", "<f2", "|u1")
_MODALITIES = ("IMAGE", "VIDEO", "AUDIO")


@named_composite("feature_shapes")
def _feature_shapes(draw, modality: str) -> Tuple[int, ...]:
    if modality == "AUDIO":
        mel, frames = draw(ints(1, 4)), draw(ints(0, 4))
        return (1, mel, frames) if draw(_BOOLS) else (mel, frames)
    if modality == "VIDEO":
        return (draw(ints(1, 2)), 3, draw(ints(1, 3)), draw(ints(1, 3)))
    if draw(_BOOLS):  # flattened patches, as Qwen-VL processors emit
        return (draw(ints(1, 6)), draw(ints(1, 4)))
    return (draw(ints(1, 2)), 3, draw(ints(1, 3)), draw(ints(1, 3)))


@functools.lru_cache(maxsize=None)
def _feature_parts(modality: str) -> Tuple[st.SearchStrategy, ...]:
    shape = _feature_shapes(modality=modality)
    tensor = tensors(dtypes=_FEATURE_TORCH_DTYPES, shape=shape)
    # the list form: one tensor per image/clip, sizes differing (as before padding)
    return tensor, ndarrays(dtypes=_FEATURE_NUMPY_DTYPES, shape=shape), lists_of(tensor, 1, 2)


@named_composite("mm_features")
def _mm_features(draw, modality: str):
    return draw(_feature_parts(modality)[draw(ints(0, 2))])


_cached_mm_features = functools.lru_cache(maxsize=None)(_mm_features)


def mm_features(modality: str = "IMAGE") -> st.SearchStrategy:
    """Processor features for one modality (``"IMAGE"``, ``"VIDEO"`` or ``"AUDIO"``).

    Pixel values ``(n, 3, h, w)`` or flattened patches ``(patches, dim)`` for
    images, ``(frames, 3, h, w)`` for video, ``(mel, frames)`` or ``(1, mel,
    frames)`` for audio; as float16/bfloat16/float32/uint8 tensors (any
    layout), float16/float32/uint8 ndarrays, or a list of per-item tensors.
    Shrinks toward a single-pixel float32 tensor of zeros.
    """
    check_choice(modality, "modality", _MODALITIES)
    return _cached_mm_features(modality=modality)


_EMBEDDINGS = st.one_of(
    tensors(dtypes=("float32", "bfloat16", "float16"), shape=st.tuples(st.integers(0, 4), st.integers(1, 4))),
    ndarrays(dtypes=("<f4", "<f2"), shape=st.tuples(st.integers(0, 4), st.integers(1, 4))),
)
_INT64_TENSORS_3 = tensors(dtypes=["int64"], shape=st.tuples(st.integers(1, 2), st.just(3)), layouts=["contiguous", "offset"])


_GRID_TIMES = st.one_of(st.lists(edge_floats(), max_size=2), tensors(dtypes=["float32"], shape=(2,)))
_IMAGE_SIZES = st.lists(st.tuples(st.integers(1, 4096), st.integers(1, 4096)), max_size=2)
_TARGET_SIZE = st.tuples(st.integers(1, 64), st.integers(1, 64))
_FEATURE_LENS = tensors(dtypes=["int64"], shape=st.tuples(st.integers(0, 3)))
_TOKEN_COUNTS = st.integers(0, 4096)
_MASKS = tensors(dtypes=["bool"], max_dims=2)
_EXTRA_KEYS = texts(max_size=8)


@named_composite("model_specific_data")
def _model_specific_data(draw, modality: Optional[str] = None, untyped: st.SearchStrategy = _UNTYPED) -> dict:
    out = {}
    if modality in (None, "IMAGE") and draw(_BOOLS):
        out["image_grid_thw"] = draw(_INT64_TENSORS_3)
    if modality in (None, "VIDEO") and draw(_BOOLS):
        out["video_grid_thw"] = draw(_INT64_TENSORS_3)
        out["second_per_grid_ts"] = draw(_GRID_TIMES)
    if modality in (None, "IMAGE") and draw(_BOOLS):
        out["image_sizes"] = draw(_IMAGE_SIZES)
        out["tgt_size"] = draw(_TARGET_SIZE)
    if modality in (None, "AUDIO") and draw(_BOOLS):
        out["audio_feature_lens"] = draw(_FEATURE_LENS)
    if draw(_BOOLS):
        out["num_tokens"] = draw(_TOKEN_COUNTS)
        out["is_dynamic"] = draw(_BOOLS)
    if draw(_BOOLS):
        out["image_emb_mask"] = draw(_MASKS)
    if _rare(draw):
        out[draw(_EXTRA_KEYS)] = draw(untyped)
    return out


_cached_model_specific_data = functools.lru_cache(maxsize=None)(_model_specific_data)


def model_specific_data(modality: Optional[str] = None) -> st.SearchStrategy[dict]:
    """``MultimodalDataItem.model_specific_data``: grids, sizes as tuples, masks, counts.

    Keys follow the processors of SGLang's VLMs (``image_grid_thw``,
    ``video_grid_thw``, ``second_per_grid_ts``, ``image_sizes``, ``tgt_size``,
    ``audio_feature_lens``, ``num_tokens``, ``is_dynamic``,
    ``image_emb_mask``) plus, rarely, an arbitrary untyped entry.
    Shrinks toward ``{}``.
    """
    if modality is not None:
        check_choice(modality, "modality", _MODALITIES)
    return _cached_model_specific_data() if modality is None else _cached_model_specific_data(modality=modality)


def _modality_name(ctx: FieldContext) -> Optional[str]:
    value = ctx.values.get("modality")
    name = getattr(value, "name", None)
    return name if name in _MODALITIES else None


def _feature_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[object]", "object", "O[any]", "any"):
        return None
    modality = _modality_name(ctx)
    if modality is None:
        return None
    return ctx.mostly(ctx.with_none(_cached_mm_features(modality=modality)))


def _embeddings_object_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[object]", "object", "O[any]", "any"):
        return None
    return ctx.mostly(ctx.with_none(_EMBEDDINGS))


def _model_specific_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("D[str,object]", "D[str,any]"):
        return None
    # the message's own untyped values: another class set's enums (an installed SGLang's) where it has them
    return ctx.mostly(_cached_model_specific_data(modality=_modality_name(ctx), untyped=ctx.untyped()))


@named_composite("offset_spans")
def _offset_spans(draw) -> List[Tuple[int, int]]:
    spans, cursor = [], 0
    for _ in range(draw(ints(0, 3))):
        start = cursor + draw(ints(0, 16))
        end = start + draw(ints(0, 16))
        spans.append((start, end))
        cursor = end + 1
    return spans


def _offsets_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[L[T[int,int]]]", "L[T[int,int]]"):
        return None
    return ctx.mostly(ctx.with_none(_offset_spans()))


def _pad_value_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[int]", "int"):
        return None
    digest = ctx.values.get("hash")
    if isinstance(digest, int):
        return ctx.mostly(ctx.with_none(st.just(digest % (1 << 30))))  # SGLang's pad value for a hash
    return None


def _pad_values_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[V[int]]", "V[int]"):
        return None
    return ctx.mostly(ctx.with_none(st.lists(st.integers(0, (1 << 30) - 1), max_size=3).map(tuple)))


def _mrope_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[Tensor]", "Tensor"):
        return None
    if ctx.name == "mrope_positions":
        shape = st.tuples(st.just(3), st.integers(0, 6))
    else:
        shape = st.just((1, 1))
    return ctx.mostly(ctx.with_none(tensors(dtypes=["int64"], shape=shape, layouts=["contiguous", "sliced", "offset"])))


# --- hidden states, experts, pooled states, embeddings --------------------------

_HIDDEN = st.one_of(st.floats(-8.0, 8.0, width=32), st.sampled_from(SPECIAL_FLOATS))


@named_composite("hidden_states")
def _hidden_states(draw, size: Optional[int] = None):
    n = draw(ints(0, 3)) if size is None else size

    def request():
        if _rare(draw, 6):
            return None
        width = draw(ints(0, 4))
        chunks = []
        for _ in range(draw(ints(0, 2))):
            chunk = []
            for _ in range(draw(ints(0, 3))):
                kind = draw(ints(0, 5))
                if kind == 4:
                    chunk.append(None)
                elif kind == 5:
                    chunk.append(draw(_HIDDEN))  # a scalar where a vector is usual
                else:
                    chunk.append([draw(_HIDDEN) for _ in range(width)])
            chunks.append(chunk)
        return chunks

    return repeat_rows([request() for _ in range(min(n, DISTINCT_REQUESTS))], n)


def hidden_states(*, batch_size: Optional[int] = None) -> st.SearchStrategy[list]:
    """``output_hidden_states`` values: per request None or chunks of hidden vectors of one width.

    A chunk entry is usually a list of ``width`` floats, sometimes a bare float
    or None. ``batch_size=None`` draws 0 to 3 requests. Shrinks toward ``[]``.
    """
    if batch_size is not None:
        check_int(batch_size, "batch_size", min_value=0)
    return _hidden_states() if batch_size is None else _hidden_states(size=batch_size)


def _hidden_states_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) != "O[L[O[L[L[O[float|L[float]]]]]]]":
        return None
    return ctx.mostly(ctx.with_none(_hidden_states(size=ctx.batch_size if ctx.parallel else None)))


@named_composite("routed_experts")
def _routed_experts(draw, as_text: bool = False):
    tokens, layers, top_k = draw(ints(0, 4)), draw(ints(1, 3)), draw(ints(1, 4))
    lead = draw(ints(0, 2))  # rows before this request's slice of the batch buffer
    raw = draw(exact_binary((tokens + lead) * layers * top_k))
    ids = np.frombuffer(raw, dtype=np.uint8).astype(np.int32).reshape(tokens + lead, layers, top_k)
    tensor = torch.from_numpy(ids)[lead:]
    if as_text:
        return base64.b64encode(tensor.contiguous().numpy().tobytes()).decode("ascii")
    return tensor


def routed_experts(*, as_text: bool = False) -> st.SearchStrategy:
    """One request's routed experts: an int32 ``(token, layer, top_k)`` tensor of expert ids.

    Often a view part-way into a larger batch buffer (storage offset > 0), as
    the scheduler slices it. ``as_text=True`` gives the base64 text of its
    bytes, as ``BatchStrOutput`` carries it. Shrinks toward an empty
    ``(0, 1, 1)`` tensor.
    """
    check_optional_bool(as_text, "as_text")
    return _routed_experts(as_text=True) if as_text else _routed_experts()


def _routed_experts_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    sig = _sig(ctx)
    if sig == "O[L[O[Tensor]]]":
        leaf = _routed_experts(as_text=False)
    elif sig == "O[L[O[str]]]":
        leaf = _routed_experts(as_text=True)
    else:
        return None
    return ctx.mostly(_shaped(ctx, leaf))


_POOLED_DTYPES = ("float32", "bfloat16", "float16")


@named_composite("pooled_hidden_states")
def _pooled_hidden_states(draw, size: int):
    hidden = draw(ints(1, 4))
    dtype = draw(choice(_POOLED_DTYPES))
    row = tensors(dtypes=[dtype], shape=(hidden,), layouts=["contiguous"], requires_grad=False)
    distinct = min(size, DISTINCT_REQUESTS)
    if size > 1 and draw(_BOOLS):
        # Stacked rows share one device (torch.stack refuses a mix, which only shows where CUDA exists); with
        # one visible device nothing is drawn, so a CPU-only machine draws what it drew before.
        visible = visible_devices()
        device = draw(choice(visible)) if len(visible) > 1 else visible[0]
        same_device = tensors(dtypes=[dtype], shape=(hidden,), layouts=["contiguous"], requires_grad=False, devices=[device])
        rows = draw(lists_of(same_device, distinct, distinct))
        return [torch.stack(repeat_rows(rows, size))]  # SGLang's stacked form: one (N, hidden) tensor
    return repeat_rows(draw(lists_of(or_none(row), distinct, distinct)), size)


def pooled_hidden_states(batch_size: int) -> st.SearchStrategy[list]:
    """``BatchEmbeddingOutput.pooled_hidden_states`` for ``batch_size`` requests.

    Either SGLang's stacked form, ``[torch.stack(rows)]`` (one ``(N, hidden)``
    tensor in a one-element list, only when N > 1, so *not* one entry per
    request), or one entry per request with ``None`` for requests without
    pooled states. Shrinks toward the per-request form with all ``None``.
    """
    check_int(batch_size, "batch_size", min_value=0)
    return _pooled_hidden_states(size=batch_size)


def _pooled_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) != "O[L[O[Tensor]]]" or not ctx.parallel:
        return None
    return ctx.mostly(ctx.with_none(_pooled_hidden_states(size=ctx.batch_size)))


_EMBED_FLOATS = st.one_of(st.floats(-1.0, 1.0, width=32), st.sampled_from(SPECIAL_FLOATS))
_SPARSE_KEYS = st.one_of(st.integers(0, 262_143), st.sampled_from([INT64_MAX, INT64_MIN, -1]))
_SPARSE = union((st.just({}), st.dictionaries(_SPARSE_KEYS, _EMBED_FLOATS, min_size=1, max_size=4)))


@named_composite("embeddings")
def _embeddings(draw, size: Optional[int] = None):
    n = draw(ints(0, 4)) if size is None else size
    mode = draw(ints(0, 7))  # 0-3: one of dense, multi-vector, sparse, score for all; else mixed
    width = draw(ints(0, 4))

    def one(kind: int):
        if kind == 0:
            return [draw(_EMBED_FLOATS) for _ in range(width)]
        if kind == 1:
            return [[draw(_EMBED_FLOATS) for _ in range(width)] for _ in range(draw(ints(0, 3)))]
        if kind == 2:
            return draw(_SPARSE)
        if kind == 3:
            return draw(_EMBED_FLOATS)
        return [draw(_EMBED_FLOATS) if draw(_BOOLS) else [draw(_EMBED_FLOATS)] for _ in range(draw(ints(0, 3)))]

    distinct = [one(mode if mode < 4 else draw(ints(0, 4))) for _ in range(min(n, DISTINCT_REQUESTS))]
    return repeat_rows(distinct, n)


def embeddings(*, batch_size: Optional[int] = None) -> st.SearchStrategy[list]:
    """``BatchEmbeddingOutput.embeddings``: per request a dense vector, a multi-vector
    list of vectors, a sparse ``{token_id: weight}`` dict or a scalar score.

    One mode for the whole batch (dense vectors share one width), or mixed
    per request, including lists that mix floats and vectors.
    ``batch_size=None`` draws 0 to 4 requests. Shrinks toward dense, empty vectors.
    """
    if batch_size is not None:
        check_int(batch_size, "batch_size", min_value=0)
    return _embeddings() if batch_size is None else _embeddings(size=batch_size)


def _embeddings_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) != "L[L[float|L[float]]|D[int,float]|float]":
        return None
    return ctx.mostly(_embeddings(size=ctx.batch_size if ctx.parallel else None))


@named_composite("input_embeds")
def _input_embeds(draw):
    width = draw(ints(0, 4))
    return [[draw(_EMBED_FLOATS) for _ in range(width)] for _ in range(draw(ints(0, 4)))]


def _input_embeds_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    if _sig(ctx) not in ("O[L[L[float]]]", "L[L[float]]"):
        return None
    return ctx.mostly(ctx.with_none(_input_embeds()))


# --- batch companions: time stats, customized info ------------------------------


def _batch_arms(ctx: FieldContext, per_batch) -> Optional[st.SearchStrategy]:
    """Every arm of ctx's union, with ``per_batch(arm)`` for the arms it recognises.

    No generic share here: a type-driven draw would not know the batch size.
    """
    t = unwrap(ctx.type)
    if not isinstance(t, mi.UnionType):
        return None
    _, arms = union_arms(t, pickle_wrappers=ctx.pickle_wrappers)
    branches, recognised = [], False
    for arm in arms:
        special = per_batch(arm)
        recognised |= special is not None
        branches.append(special if special is not None else ctx.strategy_for(arm))
    if not recognised:
        return None
    return ctx.with_none(union(tuple(branches)))


def _time_stats_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    """In a batch, ``BatchReqTimeStats``-like arms get one ``items`` entry per request."""
    if ctx.batch_size is None or not isinstance(ctx.type, mi.UnionType):
        return None

    def per_batch(arm: mi.Type) -> Optional[st.SearchStrategy]:
        if not isinstance(arm, mi.StructType):
            return None
        fields = struct_info(arm.cls).fields
        items = fields[0].type if len(fields) == 1 and fields[0].name == "items" else None
        if not isinstance(items, mi.ListType):
            return None
        item_type = items.item_type
        item = ctx.struct(item_type.cls) if isinstance(item_type, mi.StructType) else ctx.strategy_for(item_type)
        return ctx.struct(arm.cls, overrides={"items": ctx.per_request(item)})

    return _batch_arms(ctx, per_batch)


def _customized_info_factory(ctx: FieldContext) -> Optional[st.SearchStrategy]:
    """In a batch, every key maps to a list with one entry per request."""
    if ctx.batch_size is None or not _sig(ctx).startswith("O[D[str,L[any]]"):
        return None

    def per_batch(arm: mi.Type) -> Optional[st.SearchStrategy]:
        if not isinstance(arm, mi.DictType):
            return None
        # an empty batch shows its per-request lists only inside a non-empty dict
        min_size = 1 if ctx.batch_size == 0 else 0
        return st.dictionaries(texts(max_size=8), ctx.per_request(untyped_values(enums=ENUM_TYPES, max_leaves=2)), min_size=min_size, max_size=3)

    return _batch_arms(ctx, per_batch)


# --- registration -----------------------------------------------------------------


def register_defaults(registry: SemanticRegistry) -> SemanticRegistry:
    """Register every factory of this module in ``registry`` and return it."""
    for pattern in ("*_logprobs_val", "*_logprobs_idx"):
        registry.register(pattern, _logprobs_factory)
    for pattern in ("*_logprobs_val_flat", "*_logprobs_idx_flat"):
        registry.register(pattern, _flat_logprobs_factory)
    registry.register("*_flat_null_prefix", _null_prefix_factory)
    for name in ("placeholder_tokens_idx", "placeholder_tokens_val"):
        registry.register(name, _pair_factory)
    for name in ("finished_reasons", "finished_reason", "finish_reason"):
        registry.register(name, _finish_factory)
    for name in ("stop", "stop_strs"):
        registry.register(name, _stop_factory)
    for name in ("decode_ids", "output_ids", "input_ids"):
        registry.register(name, _token_array_factory)
    registry.register("feature", _feature_factory)
    registry.register("precomputed_embeddings", _embeddings_object_factory)
    registry.register("model_specific_data", _model_specific_factory)
    registry.register("offsets", _offsets_factory)
    registry.register("pad_value", _pad_value_factory)
    registry.register("pad_values", _pad_values_factory)
    for name in ("mrope_positions", "mrope_position_delta"):
        registry.register(name, _mrope_factory)
    registry.register("output_hidden_states", _hidden_states_factory)
    for name in ("routed_experts", "indexer_topk"):
        registry.register(name, _routed_experts_factory)
    registry.register("pooled_hidden_states", _pooled_factory)
    registry.register("embeddings", _embeddings_factory)
    registry.register("input_embeds", _input_embeds_factory)
    registry.register("time_stats", _time_stats_factory)
    registry.register("customized_info", _customized_info_factory)
    return registry

