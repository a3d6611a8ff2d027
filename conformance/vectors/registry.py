"""The golden vector cases' registry, and the helpers cases build their frames with.

Every module of :mod:`conformance.vectors.cases` registers its cases into
:data:`CASES` with :func:`case` and builds frames with the helpers below;
:mod:`conformance.vectors.build` writes and checks the files from them. This
module imports neither.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import msgspec
import torch

from reference_codec import ReferenceCodec, wire
from reference_codec import schema as s

from .format import V2_THRESHOLD, WIRE_VERSIONS, check_description

__all__ = [
    "Raw",
    "Case",
    "CASES",
    "case",
    "encode",
    "Ext",
    "message_body",
    "buffer_ext",
    "oob_ext",
    "untyped_message",
    "tensor_message",
    "reference_for",
    "generate_request",
    "embedding_request",
    "output_lists",
    "token_id_output",
    "str_output",
    "bf16",
    "INT64_MIN",
    "INT64_MAX",
    "UINT64_MAX",
]


# --- cases ----------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """What a hand-built case returns: frames, and for ``y_``/``i_`` the value they stand for."""

    frames: Sequence[bytes]
    expected: Any = None


@dataclass(frozen=True)
class Case:
    """One vector to generate: ``build()`` returns a message (encoded by the reference), a :class:`Raw`, or frames."""

    name: str
    wire: str
    description: str
    build: Callable[[], Any]
    reject_reason: Optional[str] = None

    @property
    def kind(self) -> str:
        return self.name[0]

    @property
    def file(self) -> str:
        return f"{self.wire}/{self.name}.json"


CASES: List[Case] = []


def case(name: str, description: str, *, wire: str = "v1", reason: Optional[str] = None):
    """Decorator registering its function as the ``build`` of a case named ``name``, appended to ``CASES``."""
    check_description(f"vector {name}", description)

    def register(build: Callable[[], Any]) -> Callable[[], Any]:
        CASES.append(Case(name, wire, description, build, reason))
        return build

    return register


# --- frame building helpers -------------------------------------------------------

encode = msgspec.msgpack.encode
Ext = msgspec.msgpack.Ext


def message_body(*items: Any) -> bytes:
    """A message body written verbatim: ``[tag, field, ...]`` with any msgpack values (``Ext``, ``msgspec.Raw``)."""
    return encode(list(items))


def buffer_ext(code: int, metadata: Any, raw: bytes) -> Ext:
    """An in-band buffer ext (codes 1-3, 66): u32 metadata length, msgpack metadata, raw bytes."""
    meta = encode(metadata)
    return Ext(code, wire.U32.pack(len(meta)) + meta + raw)


def oob_ext(code: int, metadata: Any, index: int) -> Ext:
    """An out-of-band buffer ext (codes 33-35): u32 metadata length, metadata, u32 frame index."""
    meta = encode(metadata)
    return Ext(code, wire.U32.pack(len(meta)) + meta + wire.U32.pack(index))


def untyped_message(value: Any) -> bytes:
    """The body of a ``GetInternalStateReqOutput`` whose untyped ``internal_state["value"]`` is ``value``."""
    return message_body("GetInternalStateReqOutput", None, None, {"value": value})


def tensor_message(metadata: Any, raw: bytes) -> bytes:
    """The untyped body holding an in-band tensor ext of ``metadata`` and ``raw`` bytes."""
    return untyped_message(buffer_ext(wire.EXT_TORCH_TENSOR, metadata, raw))


def reference_for(wire_version: str) -> ReferenceCodec:
    """The reference codec that writes (and reads) vectors of ``wire_version``."""
    if wire_version == "v1":
        return ReferenceCodec()
    if wire_version == "v2":
        return ReferenceCodec(out_of_band_threshold=V2_THRESHOLD)
    raise ValueError(f"unknown wire version {wire_version!r} (one of {WIRE_VERSIONS})")


# --- messages used by several cases -----------------------------------------------

INT64_MIN, INT64_MAX, UINT64_MAX = s.INT64_MIN, s.INT64_MAX, s.UINT64_MAX


def generate_request(**overrides: Any) -> s.TokenizedGenerateReqInput:
    fields: Dict[str, Any] = dict(
        rid="gen-1",
        input_text="Hello",
        input_ids=array("q", [INT64_MIN, -1, 0, 1, 2**31, INT64_MAX]),
        input_embeds=None,
        mm_inputs=None,
        token_type_ids=None,
        sampling_params=s.SamplingParams(max_new_tokens=8),
        return_logprob=False,
        logprob_start_len=-1,
        top_logprobs_num=0,
        token_ids_logprob=None,
        stream=True,
    )
    fields.update(overrides)
    return s.TokenizedGenerateReqInput(**fields)


def embedding_request(mm_item: s.MultimodalDataItem, **overrides: Any) -> s.TokenizedEmbeddingReqInput:
    fields: Dict[str, Any] = dict(
        rid="emb-1",
        input_text=None,
        input_ids=array("q", [151652, 151655, 151655, 151653]),
        mm_inputs=s.MultimodalProcessorOutput(mm_items=[mm_item], im_token_id=151655),
        token_type_ids=None,
        sampling_params=s.SamplingParams(),
    )
    fields.update(overrides)
    return s.TokenizedEmbeddingReqInput(**fields)


def output_lists(n: int) -> Dict[str, Any]:
    """The required per-request fields shared by BatchTokenIDOutput and BatchStrOutput, all None/empty."""
    return dict(
        finished_reasons=[None] * n,
        output_ids=None,
        prompt_tokens=[0] * n,
        completion_tokens=[0] * n,
        reasoning_tokens=[0] * n,
        cached_tokens=[0] * n,
        input_token_logprobs_val=None,
        input_token_logprobs_idx=None,
        output_token_logprobs_val=None,
        output_token_logprobs_idx=None,
        input_top_logprobs_val=None,
        input_top_logprobs_idx=None,
        output_top_logprobs_val=None,
        output_top_logprobs_idx=None,
        input_token_ids_logprobs_val=None,
        input_token_ids_logprobs_idx=None,
        output_token_ids_logprobs_val=None,
        output_token_ids_logprobs_idx=None,
        output_token_entropy_val=None,
        output_token_sampling_mask=None,
        output_hidden_states=None,
        routed_experts=None,
        indexer_topk=None,
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
    )


def token_id_output(n: int, **overrides: Any) -> s.BatchTokenIDOutput:
    fields = output_lists(n)
    fields.update(
        rids=[f"req-{i}" for i in range(n)],
        http_worker_ipcs=[None] * n,
        decoded_texts=[""] * n,
        decode_ids=[array("q") for _ in range(n)],
        read_offsets=[0] * n,
        skip_special_tokens=[True] * n,
        spaces_between_special_tokens=[True] * n,
        no_stop_trim=[False] * n,
    )
    fields.update(overrides)
    return s.BatchTokenIDOutput(**fields)


def str_output(n: int, **overrides: Any) -> s.BatchStrOutput:
    fields = output_lists(n)
    fields.update(rids=[f"req-{i}" for i in range(n)], http_worker_ipcs=[None] * n, output_strs=[""] * n)
    fields.update(overrides)
    return s.BatchStrOutput(**fields)


def bf16(values: List[List[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bfloat16)
