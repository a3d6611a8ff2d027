"""Hand-built messages: the simplest valid instance of any struct, and a few realistic ones (the strategies generate the rest).

Shipped with the codec (the suite, the fuzz seeds and the GPU tests use them), not part of its tests."""

from __future__ import annotations

from array import array
from typing import Any, cast

import msgspec
import numpy as np
import torch
from msgspec import inspect as mi

from reference_codec import schema as s

__all__ = ["minimal", "batch_token_id_output", "flush_cache", "tensor_ext", "body_with_feature"]


def minimal(cls: type) -> Any:
    """An instance of struct ``cls`` with every required field at its simplest valid value."""
    info = cast(mi.StructType, mi.type_info(cls))
    kwargs = {f.name: _simplest(f.type) for f in info.fields if f.required}
    return cls(**kwargs)


def _simplest(t: mi.Type) -> Any:
    if isinstance(t, mi.UnionType):
        if any(isinstance(a, mi.NoneType) for a in t.types):
            return None
        return _simplest(t.types[0])
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.IntType):
        return 0
    if isinstance(t, mi.FloatType):
        return 0.0
    if isinstance(t, mi.StrType):
        return ""
    if isinstance(t, mi.BytesType):
        return b""
    if isinstance(t, (mi.ListType, mi.VarTupleType)):
        return []
    if isinstance(t, mi.DictType):
        return {}
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.EnumType):
        return next(iter(t.cls))
    if isinstance(t, mi.StructType):
        return minimal(t.cls)
    if isinstance(t, mi.CustomType):
        if t.cls is array:
            return array("q")
        if t.cls is torch.Tensor:
            return torch.zeros(0)
        if t.cls is np.ndarray:
            return np.zeros(0)
        if t.cls is s.Int128:
            return s.Int128(0)
    if isinstance(t, mi.AnyType):
        return None
    raise NotImplementedError(t)


def batch_token_id_output(batch: int = 4, seed: int = 0) -> s.BatchTokenIDOutput:
    """A realistic scheduler output: logprobs, top-k, token ids and routed-expert tensors."""
    rng = np.random.default_rng(seed)
    rows = [int(rng.integers(1, 9)) for _ in range(batch)]
    return s.BatchTokenIDOutput(
        rids=[f"req-{i}" for i in range(batch)],
        http_worker_ipcs=[None] * batch,
        finished_reasons=[{"type": "length", "length": 16} if i % 2 else None for i in range(batch)],
        decoded_texts=["hello, wörld 🙂" for _ in range(batch)],
        decode_ids=[array("q", rng.integers(0, 150_000, n).tolist()) for n in rows],
        read_offsets=list(range(batch)),
        output_ids=None,
        skip_special_tokens=[True] * batch,
        spaces_between_special_tokens=[True] * batch,
        no_stop_trim=[False] * batch,
        prompt_tokens=[128] * batch,
        reasoning_tokens=[0] * batch,
        completion_tokens=rows,
        cached_tokens=[0] * batch,
        input_token_logprobs_val=[[None] + rng.normal(size=3).tolist() for _ in range(batch)],
        input_token_logprobs_idx=[[int(x) for x in rng.integers(0, 1000, 4)] for _ in range(batch)],
        output_token_logprobs_val=[rng.normal(size=n).tolist() for n in rows],
        output_token_logprobs_idx=[rng.integers(0, 1000, n).tolist() for n in rows],
        input_top_logprobs_val=None,
        input_top_logprobs_idx=None,
        output_top_logprobs_val=[[rng.normal(size=5).tolist() for _ in range(n)] for n in rows],
        output_top_logprobs_idx=[[rng.integers(0, 1000, 5).tolist() for _ in range(n)] for n in rows],
        input_token_ids_logprobs_val=None,
        input_token_ids_logprobs_idx=None,
        output_token_ids_logprobs_val=None,
        output_token_ids_logprobs_idx=None,
        output_token_entropy_val=None,
        output_token_sampling_mask=None,
        output_hidden_states=None,
        routed_experts=[torch.from_numpy(rng.integers(0, 64, (n + 128, 24, 8), dtype=np.int32)) for n in rows],
        indexer_topk=None,
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
    )


def flush_cache() -> s.FlushCacheReqInput:
    return s.FlushCacheReqInput(rid="a", timeout_s=1.5)




def tensor_ext(metadata, raw: bytes, code: int = 2) -> msgspec.msgpack.Ext:
    """A buffer ext built by hand, to put bytes on the wire that no encoder would write."""
    meta = msgspec.msgpack.encode(metadata)
    return msgspec.msgpack.Ext(code, len(meta).to_bytes(4, "big") + meta + raw)


def body_with_feature(value) -> bytes:
    """The wire body of a message whose untyped ``mm_items[0].feature`` is ``value``, encoded verbatim."""
    from reference_codec import schema as s

    msg = minimal(s.TokenizedEmbeddingReqInput)
    msg.mm_inputs = s.MultimodalProcessorOutput(mm_items=[s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=value)])
    return msgspec.msgpack.encode(msg)
