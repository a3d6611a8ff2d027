"""Language-neutral golden vectors for wire v1 and v2, in the manner of JSONTestSuite.

Each vector is one JSON file, ``v1/<name>.json`` or ``v2/<name>.json``, whose
name says what an implementation must do with its frames:

``y_<name>``  must decode, to ``expected``;
``n_<name>``  must be rejected with the implementation's declared decode error
              (``reject_reason`` is a substring of the reference codec's
              ``DecodeError.reason``, for the reference's own tests only);
``i_<name>``  implementation-defined: accepting and rejecting are both fine,
              but nothing may crash with any other error. When ``expected`` is
              not null, an implementation that accepts must decode to it.

A file holds exactly these keys::

    {
      "name": "y_flush_cache_req_input",     # the file name without ".json"
      "description": "one line: what it tests and why",  # ASCII, 10 to 140 characters
      "wire": "v1",                          # or "v2": the directory it is in
      "frames": ["dc0004b2466c...", ...],    # lowercase hex, frame 0 is the body
      "expected": {"$struct": ...},          # conformance.neutral form, or null
      "reject_reason": null                  # a string for n_ vectors only
    }

Files are ASCII JSON. ``expected`` is in the neutral form of
:mod:`conformance.neutral`; every tensor in it is on ``"cpu"``. v2 vectors may
have several frames and need an implementation that reads out-of-band buffers.

The files are generated, never edited by hand::

    python -m conformance.vectors generate   # (re)write v1/ and v2/ from CASES
    python -m conformance.vectors check      # exit 1 if the files are stale

``CASES`` below is the list they come from: ``y_`` cases build a message (the
reference codec encodes it) or raw frames with the value they stand for;
``n_`` and ``i_`` cases build hostile or unusual frames by hand. Generation
verifies every vector against the reference codec before writing anything, so
a checked-in vector always states what the reference does. Vectors are frozen
per wire version: a change that alters an existing file's frames or expected
value is a wire change (or a schema change) and must be deliberate.
"""

from __future__ import annotations

import difflib
import json
import os
import pickle
import struct
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import msgspec
import numpy as np
import torch

from reference_codec import DecodeError, ReferenceCodec, wire
from reference_codec import schema as s

from ..equivalence import compare
from ..neutral import from_neutral, to_neutral

__all__ = [
    "VECTORS_DIR",
    "WIRE_VERSIONS",
    "KINDS",
    "FIELDS",
    "V2_THRESHOLD",
    "Case",
    "Raw",
    "CASES",
    "GoldenVector",
    "VectorError",
    "reference_for",
    "build_vector",
    "render",
    "expected_files",
    "generate",
    "check",
    "load_vectors",
]

#: Where the checked-in vectors live: ``v1/`` and ``v2/`` below this package.
VECTORS_DIR = os.path.dirname(os.path.abspath(__file__))
WIRE_VERSIONS: Tuple[str, ...] = ("v1", "v2")
KINDS: Dict[str, str] = {
    "y": "must decode to expected",
    "n": "must be rejected with the declared decode error",
    "i": "implementation-defined: decode (to expected, if given) or the declared decode error",
}
#: The keys of every vector file, in the order they are written.
FIELDS: Tuple[str, ...] = ("name", "description", "wire", "frames", "expected", "reject_reason")
#: The out-of-band threshold the v2 vectors were encoded with (buffers of 64 bytes or more leave the body).
V2_THRESHOLD = 64

_WIDTH = 100


class VectorError(Exception):
    """A case that does not build, or a vector the reference codec does not agree with."""


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
DESCRIPTION_LENGTH = (10, 140)  # a description is one line a reader takes in at a glance


def _check_description(where: str, description: object) -> None:
    """Raise ValueError unless ``description`` is one ASCII line of ``DESCRIPTION_LENGTH`` characters."""
    low, high = DESCRIPTION_LENGTH
    if not (isinstance(description, str) and low <= len(description) <= high and description.isascii() and "\n" not in description):
        raise ValueError(f"{where}: description must be one ASCII line of {low} to {high} characters: {description!r:.200}")


def _case(name: str, description: str, *, wire: str = "v1", reason: Optional[str] = None):
    _check_description(f"vector {name}", description)

    def register(build: Callable[[], Any]) -> Callable[[], Any]:
        CASES.append(Case(name, wire, description, build, reason))
        return build

    return register


# --- frame building helpers -------------------------------------------------------

_enc = msgspec.msgpack.encode
Ext = msgspec.msgpack.Ext


def _body(*items: Any) -> bytes:
    """A message body written verbatim: ``[tag, field, ...]`` with any msgpack values (``Ext``, ``msgspec.Raw``)."""
    return _enc(list(items))


def _buffer_ext(code: int, metadata: Any, raw: bytes) -> Ext:
    """An in-band buffer ext (codes 1-3, 66): u32 metadata length, msgpack metadata, raw bytes."""
    meta = _enc(metadata)
    return Ext(code, wire.U32.pack(len(meta)) + meta + raw)


def _oob_ext(code: int, metadata: Any, index: int) -> Ext:
    """An out-of-band buffer ext (codes 33-35): u32 metadata length, metadata, u32 frame index."""
    meta = _enc(metadata)
    return Ext(code, wire.U32.pack(len(meta)) + meta + wire.U32.pack(index))


def _untyped(value: Any) -> bytes:
    """The body of a ``GetInternalStateReqOutput`` whose untyped ``internal_state["value"]`` is ``value``."""
    return _body("GetInternalStateReqOutput", None, None, {"value": value})


def _f64(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def reference_for(wire_version: str) -> ReferenceCodec:
    """The reference codec that writes (and reads) vectors of ``wire_version``."""
    if wire_version == "v1":
        return ReferenceCodec()
    if wire_version == "v2":
        return ReferenceCodec(out_of_band_threshold=V2_THRESHOLD)
    raise ValueError(f"unknown wire version {wire_version!r} (one of {WIRE_VERSIONS})")


def _generic(body: bytes) -> list:
    return msgspec.msgpack.decode(body, ext_hook=lambda code, data: Ext(code, bytes(data)))


# --- messages used by several cases -----------------------------------------------

INT64_MIN, INT64_MAX, UINT64_MAX = s.INT64_MIN, s.INT64_MAX, s.UINT64_MAX


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


def _generate_request(**overrides: Any) -> s.TokenizedGenerateReqInput:
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


def _embedding_request(mm_item: s.MultimodalDataItem, **overrides: Any) -> s.TokenizedEmbeddingReqInput:
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


def _output_lists(n: int) -> Dict[str, Any]:
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


def _token_id_output(n: int, **overrides: Any) -> s.BatchTokenIDOutput:
    fields = _output_lists(n)
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


def _str_output(n: int, **overrides: Any) -> s.BatchStrOutput:
    fields = _output_lists(n)
    fields.update(rids=[f"req-{i}" for i in range(n)], http_worker_ipcs=[None] * n, output_strs=[""] * n)
    fields.update(overrides)
    return s.BatchStrOutput(**fields)


def _bf16(values: List[List[float]]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.bfloat16)


# =================================================================================
# y_ (wire v1): must decode to the message
# =================================================================================


@_case("y_flush_cache_req_input", "smallest control message: tag, base fields rid/http_worker_ipc, one Optional[float]")
def _():
    return s.FlushCacheReqInput(rid="flush-1", timeout_s=1.5)


@_case("y_abort_req", "AbortReq with a finish-reason dict (str and int values) and a positional nested struct list")
def _():
    return s.AbortReq(
        rid="req-7",
        finished_reason={"type": "abort", "message": "client disconnected", "status_code": 499},
        abort_message="client disconnected",
        weight_versions=[s.WeightVersionSpan(version="v1", start=0, end=12)],
    )


@_case(
    "y_batch_token_id_output_logprobs",
    "detokenizer batch: logprob rows holding None, an empty row, a None row, [[]] chunks, ragged two-level top-k",
)
def _():
    return _token_id_output(
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


@_case(
    "y_batch_token_id_output_buffers",
    "typed buffers in a batch: decode_ids arrays, routed_experts int32 tensors, ndarray sampling masks and flat top-k",
)
def _():
    return _token_id_output(
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


@_case("y_batch_str_output", "detokenizer output to the tokenizer: strings, output_ids arrays, customized_info with Any values")
def _():
    return _str_output(
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


@_case("y_batch_str_output_empty_batch", "a batch of zero requests: every per-request list is empty, not None")
def _():
    return _str_output(0)


@_case(
    "y_tokenized_generate_req_input",
    "request with SamplingParams (set, dicts, nested struct), input_ids array('q') holding int64 extremes, enum-keyed dict",
)
def _():
    return _generate_request(
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


@_case(
    "y_batch_tokenized_generate_req_input",
    "a batch message holding two tagged request messages as items (messages nested in messages)",
)
def _():
    return s.BatchTokenizedGenerateReqInput(
        rids=["a", "b"],
        batch=[_generate_request(rid="a"), _generate_request(rid="b", input_ids=array("q"), stream=False)],
    )


@_case(
    "y_multimodal_bf16_feature",
    "multimodal item: bfloat16 feature tensor, uint64 hash, offsets as tuples, tuple pad_values, tensors in model_specific_data",
)
def _():
    item = s.MultimodalDataItem(
        modality=s.Modality.IMAGE,
        hash=UINT64_MAX,
        pad_value=151655,
        offsets=[(1, 3)],
        feature=_bf16([[0.5, -1.0, 3.140625, -0.0], [65280.0, 1e-3, float("inf"), float("nan")]]),
        model_specific_data={"image_grid_thw": torch.tensor([[1, 2, 2]], dtype=torch.int64)},
        pad_values=(151655,),
    )
    return _embedding_request(item, mm_inputs=s.MultimodalProcessorOutput(
        mm_items=[item], im_token_id=151655, mrope_positions=torch.arange(12, dtype=torch.int64).reshape(3, 4)
    ))


@_case("y_tensor_0d_and_empty", "tensor shapes with no data: 0-d scalar, (0, 3) and (3, 0) are different shapes, all kept")
def _():
    item = s.MultimodalDataItem(
        modality=s.Modality.VIDEO,
        feature=torch.tensor(3.5, dtype=torch.float32),
        model_specific_data={
            "empty_rows": torch.zeros(0, 3, dtype=torch.float16),
            "empty_cols": torch.zeros(3, 0, dtype=torch.int64),
            "zero_d_int": torch.tensor(-7, dtype=torch.int32),
        },
    )
    return _embedding_request(item)


@_case("y_tensor_requires_grad", "a float tensor that requires grad: the reference's optional 4th metadata element (true)")
def _():
    embeds = torch.tensor([[0.25, -0.5, 1.0], [2.0, -4.0, 8.0]], dtype=torch.float32).requires_grad_(True)
    return _generate_request(positional_embed_overrides=s.PositionalEmbeds(embeds=embeds, positions=[0, 5]))


@_case(
    "y_tensor_dtypes",
    "tensor dtypes a non-Python peer must size right: float8_e4m3fn, complex64, bool, uint16, float16 (bytes as in memory)",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "fp8": torch.tensor([0.5, -2.0, 448.0], dtype=torch.float32).to(torch.float8_e4m3fn),
            "c64": torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64),
            "mask": torch.tensor([True, False, True]),
            "u16": torch.tensor([0, 65535], dtype=torch.uint16),
            "f16": torch.tensor([[1.0, -0.0], [65504.0, 6e-08]], dtype=torch.float16),
        }
    )


@_case("y_ndarray_big_endian", "ndarrays in big-endian byte order (dtype.str '>i8', '>f4') keep their byte order")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "be_i8": np.array([1, -2, 2**62], dtype=">i8"),
            "be_f4": np.array([[1.5, -0.0]], dtype=">f4"),
            "le_u2": np.array([513], dtype="<u2"),
        }
    )


@_case(
    "y_ndarray_structured",
    "structured ndarray (reference extension): dtype as a descr list [[name, type(, shape)]], big-endian field, subarray",
)
def _():
    # Packed: the reference does not yet rebuild padding fields ("" in descr) faithfully.
    dtype = np.dtype([("id", "<u2"), ("score", ">f8"), ("pos", "<i4", (2,))])
    values = np.zeros(2, dtype=dtype)
    values["id"] = [1, 65535]
    values["score"] = [0.5, -1.25]
    values["pos"] = [[1, 2], [-3, 4]]
    return s.GetInternalStateReqOutput(internal_state={"records": values})


@_case("y_numpy_scalars", "numpy scalars in untyped fields (ext 66) stay numpy scalars of their dtype, not Python numbers")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "f32": np.float32(1.5),
            "f64": np.float64(0.1),
            "f16": np.float16(-0.0),
            "i8": np.int8(-128),
            "u64": np.uint64(UINT64_MAX),
            "b": np.bool_(True),
            "c64": np.complex64(1 - 2j),
        }
    )


@_case(
    "y_untyped_python_types",
    "untyped values keep Python types: tuple (ext 64), torch.Size (65), enum (68), >64-bit ints (67), int keys, bytes",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "tuple": (1, "a", (2.5, None), []),
            "size": torch.Size([2, 3]),
            "empty_size": torch.Size([]),
            "enum": s.Modality.VIDEO,
            "big": 2**100,
            "most_negative_128": -(2**127),
            "u64": UINT64_MAX,
            "i64_min": INT64_MIN,
            "just_past_u64": 2**64,
            "bytes": b"\x00\xff",
            "int_keys": {1: "one", -1: "minus one"},
            "list_of_tuples": [(1, 2), ()],
        }
    )


@_case("y_array_typecodes", "array.array of fixed-size typecodes keeps its typecode (b B h H i I q Q f d), machine bytes")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "b": array("b", [-128, 127]),
            "B": array("B", [0, 255]),
            "h": array("h", [-32768]),
            "H": array("H", [65535]),
            "i": array("i", [-(2**31)]),
            "I": array("I", [2**32 - 1]),
            "q": array("q", [INT64_MIN, INT64_MAX]),
            "Q": array("Q", [UINT64_MAX]),
            "f": array("f", [1.5, float("-inf")]),
            "d": array("d", [-0.0, 5e-324]),
            "empty": array("d"),
        }
    )


@_case("y_trace_id_int128", "request time stats carrying a 128-bit OpenTelemetry trace id (Int128 as ext 67) and uint64 span id")
def _():
    trace = s.TraceContext(trace_id=s.Int128(0x4BF92F3577B34DA6A3CE929D0E0E4736), span_id=0x00F067AA0BA902B7)
    stats = s.APIServerReqTimeStats(created_time=1700000000.25, tokenize_finish_time=1700000000.5, trace=trace)
    return _generate_request(time_stats=stats)


@_case("y_int128_extremes", "batch time stats whose trace ids are -2**127, 2**127-1, 0 and -1: minimal two's-complement ext 67")
def _():
    items = [
        s.SchedulerReqTimeStats(trace=s.TraceContext(trace_id=s.Int128(v), span_id=UINT64_MAX, trace_flags=0))
        for v in (s.Int128.MIN, s.Int128.MAX, 0, -1)
    ]
    return _token_id_output(4, time_stats=s.BatchReqTimeStats(items=items))


@_case(
    "y_float_edge_cases",
    "float64 bits exactly: -0.0, +-inf, quiet and signalling NaN payloads, negative NaN, smallest/largest subnormal, max",
)
def _():
    return s.GetWeightsByNameReqOutput(
        parameter=[
            0.0,
            -0.0,
            float("inf"),
            float("-inf"),
            _f64("7ff8000000000000"),
            _f64("7ff8000000000abc"),
            _f64("7ff0000000000001"),
            _f64("fff8000000000000"),
            5e-324,
            _f64("000fffffffffffff"),
            1.7976931348623157e308,
            [0.1, -1e-300],
        ]
    )


@_case(
    "y_non_ascii_strings",
    "UTF-8 text: accents, CJK, RTL, emoji ZWJ, combining marks, NUL, U+2028, BOM, U+10FFFF, in str fields and dict keys",
)
def _():
    return s.GetInternalStateReqOutput(
        rid="h\u00e9llo-\U0001f642",
        internal_state={
            "\u6f22\u5b57": "\u6f22\u5b57\u304b\u306a \u05e9\u05dc\u05d5\u05dd",
            "zwj": "\U0001f469\u200d\U0001f4bb e\u0301",
            "controls": "a\x00b\u2028c\ufeffd",
            "max": "\U0010ffff",
        },
    )


@_case("y_map_encoded_structs", "nested structs without array_like travel as maps keyed by field name (ChecksumInfo, ParallelismInfo)")
def _():
    info = s.ParallelismInfo(role="tp", tp_rank=1, tp_size=2, dp_rank=0, dp_size=1, pp_rank=0, pp_size=1, rank=1, size=2)
    return s.CheckWeightsReqOutput(
        success=True,
        message="ok",
        payload=[s.ChecksumInfo(checksums={"layer.0": "ab12"}, per_gpu_checksum="ff00", parallelism_info=[info])],
    )


@_case("y_batch_embedding_output_unions", "embedding unions: list of floats, nested lists, int-keyed sparse dict, bare float; pooled tensors")
def _():
    return s.BatchEmbeddingOutput(
        rids=["e0", "e1", "e2", "e3"],
        finished_reasons=[None] * 4,
        embeddings=[[0.5, -1.0], [[1.0], 2.0], {7: 0.25, 1024: -0.5}, 3.0],
        prompt_tokens=[1, 2, 3, 4],
        cached_tokens=[0, 0, 0, 0],
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
        pooled_hidden_states=[None, torch.tensor([1.0, -1.0]), None, None],
    )


@_case("y_profile_req_enum_field", "a typed enum field travels as its value (ProfileReqType.STOP_PROFILE is 2)")
def _():
    return s.ProfileReq(req_type=s.ProfileReqType.STOP_PROFILE, output_dir="/tmp/p", num_steps=5, activities=["CPU", "GPU"])


@_case("y_load_lora_adapter_req_input", "a LoRA control request: required str fields after the base fields, bool and Optional defaults")
def _():
    return s.LoadLoRAAdapterReqInput(lora_name="sql", lora_path="/loras/sql", pinned=True)


@_case(
    "y_old_schema_missing_trailing_fields",
    "an older sender's request ends after `stream`: every later field takes its default (tail-only schema evolution)",
)
def _():
    msg = _generate_request(sampling_params=s.SamplingParams(max_new_tokens=4, stop="</s>"))
    body = reference_for("v1").encode(msg)[0]
    items = _generic(body)
    cut = 1 + s.TokenizedGenerateReqInput.__struct_fields__.index("stream") + 1
    return Raw([_enc(items[:cut])], msg)


@_case("y_tag_only_message", "only the tag: every field of FlushCacheReqInput has a default, so the oldest possible sender decodes")
def _():
    return Raw([_body("FlushCacheReqInput")], s.FlushCacheReqInput())


@_case(
    "y_newer_schema_extra_trailing_fields",
    "a newer sender appended fields (str, int, array, map, nil): a decoder ignores extra trailing elements",
)
def _():
    return Raw(
        [_body("FlushCacheReqInput", "flush-2", None, 0.5, "future", 7, [1.5, None], {"k": b"v"}, None)],
        s.FlushCacheReqInput(rid="flush-2", timeout_s=0.5),
    )


@_case(
    "y_non_minimal_msgpack_encodings",
    "valid but non-minimal msgpack: array32, str32/str16/str8, map32, uint64/int64 holding small ints, float32 not used",
)
def _():
    body = (
        b"\xdd\x00\x00\x00\x06"  # array32 of 6
        + b"\xdb\x00\x00\x00\x1c" + b"ListExternalCorporaReqOutput"  # str32 tag
        + b"\xda\x00\x01" + b"r"  # str16 rid
        + b"\xc0"  # http_worker_ipc nil
        + b"\xc3"  # success true
        + b"\xdf\x00\x00\x00\x02"  # map32 of 2
        + b"\xd9\x01" + b"a" + b"\xcf" + (7).to_bytes(8, "big")  # str8 key, uint64 value
        + b"\xa1" + b"b" + b"\xd3" + (-3).to_bytes(8, "big", signed=True)  # int64 value
        + b"\xd9\x00"  # message: empty str8
    )
    return Raw([body], s.ListExternalCorporaReqOutput(rid="r", success=True, corpus_token_counts={"a": 7, "b": -3}))


# =================================================================================
# y_ (wire v2): out-of-band buffers
# =================================================================================


@_case(
    "y_v2_out_of_band_tensor",
    "a 64-byte bf16 feature tensor leaves the body as frame 1 (ext 34: metadata, then the u32 frame index)",
    wire="v2",
)
def _():
    feature = _bf16([[float(i) / 4 - 2 for i in range(8)] for _ in range(4)])
    return _embedding_request(s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=feature))


@_case(
    "y_v2_mixed_in_band_and_out_of_band",
    "buffers under 64 bytes stay in the body, larger ones become frames 1..n in the order the body references them",
    wire="v2",
)
def _():
    return _token_id_output(
        3,
        decode_ids=[array("q", range(8)), array("q", [5]), array("q", range(100, 116))],
        completion_tokens=[8, 1, 16],
        routed_experts=[torch.arange(24, dtype=torch.int32).reshape(4, 3, 2), torch.zeros(1, 3, 2, dtype=torch.int32), None],
        input_top_logprobs_val_flat=[(np.arange(16, dtype="<f4") - 16) / 16, None, np.array([-0.5], dtype="<f4")],
    )


@_case(
    "y_v2_out_of_band_array_and_ndarray",
    "out-of-band array.array (ext 33) and big-endian ndarray (ext 35) in untyped positions; ext 35 metadata keeps the dtype",
    wire="v2",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={"ids": array("q", range(-4, 8)), "be": np.arange(10, dtype=">f8").reshape(2, 5), "small": array("b", [1])}
    )


@_case(
    "y_v2_message_without_large_buffers",
    "a v2 message with no buffer over the threshold is one frame, byte-identical to v1: a v2 decoder reads v1",
    wire="v2",
)
def _():
    return _generate_request()


# =================================================================================
# n_ (wire v1): must be rejected
# =================================================================================


def _flush_body() -> bytes:
    return _body("FlushCacheReqInput", "flush-1", None, 1.5)


@_case("n_truncated_body", "the body's last byte is missing (a frame cut short)", reason="truncated")
def _():
    return [_flush_body()[:-1]]


@_case("n_truncated_inside_tensor", "the body ends inside a tensor ext payload", reason="truncated")
def _():
    body = reference_for("v1").encode(_embedding_request(s.MultimodalDataItem(modality=s.Modality.IMAGE, feature=torch.ones(4))))[0]
    return [body[: len(body) - 30]]


@_case("n_empty_frame", "the only frame is empty: no message at all", reason="truncated")
def _():
    return [b""]


@_case("n_no_frames", "a message with zero frames", reason="no frames")
def _():
    return []


@_case(
    "n_trailing_bytes_after_body",
    "one valid body followed by an extra byte (what a reused ZeroMQ buffer looks like): not a message",
    reason="trailing characters",
)
def _():
    return [_flush_body() + b"\xc0"]


@_case("n_reserved_msgpack_byte", "0xc1 is never used by msgpack: malformed, not skipped", reason="invalid opcode")
def _():
    return [_body("FlushCacheReqInput", "a", None, msgspec.Raw(b"\xc1"))]


@_case("n_top_level_str_body", "a bare msgpack str is not a message: every message is a tagged array", reason="Expected `array`, got `str`")
def _():
    return [_enc("FlushCacheReqInput")]


@_case("n_body_is_a_map", "a map body (msgspec's default struct encoding) is not the positional wire form", reason="Expected `array`, got `object`")
def _():
    return [_enc({"type": "FlushCacheReqInput", "rid": "a"})]


@_case("n_unknown_tag", "the tag names no message of the schema", reason="Invalid value 'NoSuchMessage'")
def _():
    return [_body("NoSuchMessage", None, None)]


@_case("n_tag_not_a_string", "the first element must be the tag str", reason="Expected `str`, got `null`")
def _():
    return [_body(None, None, None)]


@_case(
    "n_missing_required_field",
    "EncoderDispatchErrorReq without its required error_code: only fields with defaults may be missing",
    reason="Expected `array` of at least length 5, got 4",
)
def _():
    return [_body("EncoderDispatchErrorReq", None, None, "boom")]


@_case("n_wrong_field_type", "a str where Optional[float] timeout_s is declared", reason="Expected `float | null`, got `str`")
def _():
    return [_body("FlushCacheReqInput", "a", None, "not a float")]


@_case("n_nil_for_required_bool", "nil in a required, non-Optional bool field", reason="Expected `bool`, got `None`")
def _():
    return [_body("FlushCacheReqOutput", None, None, None)]


@_case("n_bool_for_int_field", "true is not an int (msgpack bool and int are distinct types)", reason="Expected `int`, got `bool`")
def _():
    return [_body("EncoderDispatchErrorReq", None, None, "boom", True)]


@_case("n_int64_field_overflow", "2**64-1 in an Int64 field: valid msgpack uint64, out of the declared range", reason="<= 9223372036854775807")
def _():
    return [_body("EncoderDispatchErrorReq", None, None, "boom", UINT64_MAX)]


@_case("n_invalid_utf8_str", "a msgpack str (rid) whose bytes are not UTF-8", reason="Invalid UTF-8")
def _():
    return [_body("FlushCacheReqInput", msgspec.Raw(b"\xa2\xff\xfe"), None, None)]


@_case("n_invalid_utf8_in_untyped_str", "invalid UTF-8 in a str inside an untyped value", reason="Invalid UTF-8")
def _():
    return [_untyped(msgspec.Raw(b"\xa3a\xc3("))]


@_case("n_invalid_enum_value", "modality 9 is not a Modality value (typed enum field)", reason="Invalid enum value 9")
def _():
    return [_body("TokenizedEmbeddingReqInput", None, None, None, None, [[[9]]], None, [])]


def _tensor(metadata: Any, raw: bytes) -> bytes:
    return _untyped(_buffer_ext(wire.EXT_TORCH_TENSOR, metadata, raw))


@_case("n_huge_shape_no_data", "a tensor declaring 2**40 elements with no bytes: refused before any allocation", reason="declares more than")
def _():
    return [_tensor([[2**40], "float32", "cpu"], b"")]


@_case("n_huge_shape_product", "dimensions whose product overflows 64 bits (2**32 x 2**32 x 16)", reason="declares more than")
def _():
    return [_tensor([[2**32, 2**32, 16], "uint8", "cpu"], b"")]


@_case("n_tensor_length_mismatch", "shape [4] float32 needs 16 bytes, the payload carries 12", reason="= 16 bytes, but the buffer carries 12")
def _():
    return [_tensor([[4], "float32", "cpu"], b"\x00" * 12)]


@_case("n_unknown_torch_dtype", "a dtype name outside the allowlist", reason="unknown torch dtype 'float128'")
def _():
    return [_tensor([[2], "float128", "cpu"], b"\x00" * 32)]


@_case(
    "n_hostile_dtype_text",
    "dtype text that would run code if passed to eval/getattr(torch, ...): must be looked up, never evaluated",
    reason="unknown torch dtype",
)
def _():
    return [_tensor([[2], "__import__('os').system('true')", "cpu"], b"")]


@_case("n_invalid_device", "a device string that is not a device (shell injection text)", reason="invalid device")
def _():
    return [_tensor([[1], "float32", "cuda:1; rm -rf /"], b"\x00" * 4)]


@_case("n_meta_device", "'meta' tensors have no data and are refused", reason="invalid device")
def _():
    return [_tensor([[1], "float32", "meta"], b"\x00" * 4)]


@_case("n_negative_dimension", "a negative dimension in a tensor shape", reason="not a non-negative int")
def _():
    return [_tensor([[-1], "float32", "cpu"], b"")]


@_case("n_requires_grad_on_int_tensor", "requires_grad true on an int32 tensor (torch cannot)", reason="cannot require grad")
def _():
    return [_tensor([[1], "int32", "cpu", True], b"\x00" * 4)]


@_case("n_tensor_metadata_not_array", "tensor metadata that is a str instead of [shape, dtype, device]", reason="tensor metadata must be")
def _():
    return [_tensor("not a list", b"")]


@_case("n_lying_metadata_length", "the u32 metadata length (4096) runs past the end of the ext payload", reason="runs past the end")
def _():
    return [_untyped(Ext(wire.EXT_TORCH_TENSOR, b"\x00\x00\x10\x00\x91"))]


@_case("n_truncated_metadata_prefix", "a buffer ext payload shorter than its 4-byte metadata length", reason="shorter than its metadata length prefix")
def _():
    return [_untyped(Ext(wire.EXT_TORCH_TENSOR, b"\x00\x00"))]


@_case(
    "i_unknown_ext_code",
    "ext code 99 is not defined by the wire: the reference refuses it, SGLang keeps it opaque (wire.py: unknown ext codes)",
)
def _():
    return [_untyped(Ext(99, b"\x90"))]


@_case("n_sglang_shm_pointer_ext_4", "SGLang's ext 4 (shared-memory handle) is process-local: refused", reason="process-local")
def _():
    return [_untyped(Ext(wire.EXT_SGLANG_SHM_POINTER, b"\x90"))]


@_case("n_sglang_cuda_ipc_ext_5", "SGLang's ext 5 (CUDA IPC tensor proxy) is process-local: refused", reason="process-local")
def _():
    return [_untyped(Ext(wire.EXT_SGLANG_CUDA_IPC, b"\x90"))]


@_case("n_object_dtype_ndarray", "an ndarray of dtype '|O' (Python objects) has no byte layout", reason="holds Python objects")
def _():
    return [_untyped(_buffer_ext(wire.EXT_NDARRAY, [[2], "|O"], b"\x00" * 16))]


@_case("n_ndarray_length_mismatch", "shape [3] '<f8' needs 24 bytes, the payload carries 8", reason="= 24 bytes, but the buffer carries 8")
def _():
    return [_untyped(_buffer_ext(wire.EXT_NDARRAY, [[3], "<f8"], b"\x00" * 8))]


@_case("n_array_ragged_bytes", "array('q') with 7 bytes: not a whole number of items", reason="not a multiple of itemsize 8")
def _():
    return [_untyped(_buffer_ext(wire.EXT_ARRAY, "q", b"\x00" * 7))]


@_case("n_unknown_array_typecode", "array typecode 'z' does not exist", reason="unknown array typecode")
def _():
    return [_untyped(_buffer_ext(wire.EXT_ARRAY, "z", b"\x00" * 8))]


@_case("n_numpy_scalar_wrong_size", "a '<f4' numpy scalar (ext 66) with 3 bytes", reason="needs 4 bytes, got 3")
def _():
    return [_untyped(_buffer_ext(wire.EXT_NUMPY_SCALAR, "<f4", b"\x00" * 3))]


@_case("n_torch_size_negative", "a torch.Size (ext 65) with a negative dimension", reason="torch.Size payload is not an array of non-negative ints")
def _():
    return [_untyped(Ext(wire.EXT_TORCH_SIZE, _enc([2, -1])))]


@_case("n_tuple_payload_not_array", "a tuple (ext 64) whose payload is an int, not an array", reason="tuple payload is not an array")
def _():
    return [_untyped(Ext(wire.EXT_TUPLE, _enc(5)))]


@_case("n_bigint_too_long", "a big integer (ext 67) of 17 bytes: more than 128 bits", reason="big integer of 17 bytes")
def _():
    return [_untyped(Ext(wire.EXT_BIGINT, b"\x01" * 17))]


@_case("n_bigint_empty", "a big integer (ext 67) of 0 bytes", reason="big integer of 0 bytes")
def _():
    return [_untyped(Ext(wire.EXT_BIGINT, b""))]


@_case("n_unknown_enum_ext", "an enum member (ext 68) of a class outside the schema's enums", reason="is not an enum of the schema")
def _():
    return [_untyped(Ext(wire.EXT_ENUM, _enc(["os.system", 1])))]


@_case("n_enum_ext_bad_value", "an enum member (ext 68) whose value is not a member of the class", reason="99 is not a valid Modality")
def _():
    return [_untyped(Ext(wire.EXT_ENUM, _enc(["Modality", 99])))]


@_case("n_invalid_timestamp_ext", "msgpack's own timestamp ext (-1) with a 3-byte payload is malformed msgpack", reason="Invalid MessagePack timestamp")
def _():
    return [_untyped(Ext(-1, b"abc"))]


@_case(
    "n_pickled_time_stats",
    "SGLang's PickleWrapper in time_stats: unpickling is refused (the payload is a harmless pickled dict)",
    reason="pickled payload refused",
)
def _():
    msg = _generate_request(time_stats=s.PickleWrapper(pickle.dumps({"created_time": 1.0}, protocol=4)))
    return reference_for("v1").encode(msg)


@_case(
    "n_pickled_customized_info",
    "SGLang's PickleWrapper in customized_info of an output batch: refused like time_stats",
    reason="pickled payload refused",
)
def _():
    msg = _str_output(1, customized_info=s.PickleWrapper(pickle.dumps({"k": [1]}, protocol=4)))
    return reference_for("v1").encode(msg)


@_case("n_pickle_wrapper_in_typed_field", "a PickleWrapper where a float is declared is a type error", reason="Expected `float | null`, got `array`")
def _():
    return [_body("FlushCacheReqInput", "a", None, s.PickleWrapper(b"\x80\x04K\x01."))]


@_case("n_deep_nesting_untyped", "an untyped value nested 100 arrays deep: over the depth limit of 64", reason="nested deeper than 64")
def _():
    return [_untyped(msgspec.Raw(b"\x91" * 100 + b"\xc0"))]


@_case("n_deep_nesting_stack", "5000 nested arrays: must be refused without exhausting the decoder's stack", reason="recursion limit")
def _():
    return [_untyped(msgspec.Raw(b"\x91" * 5000 + b"\xc0"))]


@_case("n_deep_tuple_nesting", "tuples (ext 64) nested 100 deep inside each other's payloads", reason="deeper than")
def _():
    payload = _enc([])
    for _ in range(100):
        payload = _enc([Ext(wire.EXT_TUPLE, payload)])
    return [_untyped(Ext(wire.EXT_TUPLE, payload))]


# =================================================================================
# n_ (wire v2): out-of-band frame bookkeeping
# =================================================================================

_F32_1 = [[1], "float32", "cpu"]


@_case("n_v2_frame_index_out_of_range", "an out-of-band tensor refers to frame 2 of a 2-frame message", wire="v2", reason="refers to frame 2")
def _():
    return [_untyped(_oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 2)), b"\x00" * 4]


@_case("n_v2_frame_index_zero", "frame 0 is the body and can never be a buffer", wire="v2", reason="refers to frame 0")
def _():
    return [_untyped(_oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 0)), b"\x00" * 4]


@_case("n_v2_frame_referenced_twice", "two tensors refer to the same frame: each frame is referenced exactly once", wire="v2", reason="referenced twice")
def _():
    ext = _oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)
    return [_untyped([ext, ext]), b"\x00" * 4]


@_case("n_v2_unreferenced_extra_frame", "a junk frame no buffer refers to", wire="v2", reason="not referenced")
def _():
    return [_untyped(_oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)), b"\x00" * 4, b"junk"]


@_case(
    "n_v2_missing_frame",
    "a real v2 message with two out-of-band buffers whose last frame was dropped in transit",
    wire="v2",
    reason="refers to frame 2, but the message has 2 frame(s)",
)
def _():
    msg = s.GetInternalStateReqOutput(internal_state={"a": torch.zeros(16), "b": torch.ones(16)})
    frames = reference_for("v2").encode(msg)
    assert len(frames) == 3
    return frames[:2]


@_case("n_v2_frame_length_mismatch", "frame 1 has 8 bytes for a [1] float32 tensor", wire="v2", reason="= 4 bytes, but the buffer carries 8")
def _():
    return [_untyped(_oob_ext(wire.EXT_OOB_TORCH_TENSOR, _F32_1, 1)), b"\x00" * 8]


@_case(
    "n_v2_payload_without_frame_index",
    "an out-of-band ext whose payload ends after the metadata, without the u32 frame index",
    wire="v2",
    reason="must end in a 4-byte frame index",
)
def _():
    meta = _enc(_F32_1)
    return [_untyped(Ext(wire.EXT_OOB_TORCH_TENSOR, wire.U32.pack(len(meta)) + meta)), b"\x00" * 4]


# =================================================================================
# i_: implementation-defined
# =================================================================================


@_case("i_int_for_float_field", "a msgpack int where float is declared: msgspec accepts it as 1.0; a stricter decoder may refuse")
def _():
    return Raw([_body("FlushCacheReqInput", "a", None, 1)], s.FlushCacheReqInput(rid="a", timeout_s=1.0))


@_case("i_float32_for_float_field", "msgpack float32 where float64 is declared: the wire never writes it; widening to 1.5 is fine")
def _():
    return Raw([_body("FlushCacheReqInput", "a", None, msgspec.Raw(b"\xca\x3f\xc0\x00\x00"))], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@_case("i_cuda_device_tensor", "a tensor sent from 'cuda:0': kept on cuda:0 where it exists, refused (or mapped) where it does not")
def _():
    return Raw([_tensor([[1], "float32", "cuda:0"], b"\x00\x00\x80\x3f")])


@_case("i_device_without_index", "device 'cuda' without an index is valid wire text; placing it depends on the machine")
def _():
    return Raw([_tensor([[1], "float32", "cuda"], b"\x00\x00\x80\x3f")])


@_case(
    "n_timestamp_ext_in_untyped_field",
    "msgpack's timestamp ext (-1) in an untyped field: a datetime the reference never writes and could not re-encode on a second hop",
    reason="msgpack timestamp ext -1",
)
def _():
    return Raw([_untyped(Ext(-1, (1700000000).to_bytes(4, "big")))])


@_case(
    "n_array_map_key_in_untyped_field",
    "an untyped map keyed by an array: decodes to a tuple key that no encoder writes (found by fuzzing the testee)",
    reason="map key of type tuple in an untyped field",
)
def _():
    return Raw([_untyped(msgspec.Raw(b"\x81\x92\x01\x02\xc0"))])


@_case(
    "n_timestamp_map_key_in_untyped_field",
    "an untyped map keyed by msgpack's timestamp ext (-1): a datetime key that no encoder writes",
    reason="map key of type datetime in an untyped field",
)
def _():
    return Raw([_untyped(msgspec.Raw(b"\x81\xd6\xff" + (1700000000).to_bytes(4, "big") + b"\xc0"))])


@_case("i_duplicate_map_keys", "a Dict[str, Any] map holding key 'a' twice: last-wins, first-wins or refusal are all seen in practice")
def _():
    return Raw([_body("GetInternalStateReqOutput", None, None, msgspec.Raw(b"\x82\xa1a\x01\xa1a\x02"))])


@_case("i_unknown_key_in_map_struct", "a map-encoded struct (ChecksumInfo) with a key the schema lacks: ignored by msgspec")
def _():
    checksum = {"checksums": {}, "per_gpu_checksum": "x", "parallelism_info": [], "added_later": 1}
    expected = s.CheckWeightsReqOutput(
        success=True, message="m", payload=[s.ChecksumInfo(checksums={}, per_gpu_checksum="x", parallelism_info=[])]
    )
    return Raw([_body("CheckWeightsReqOutput", None, None, True, "m", [checksum])], expected)


@_case("i_bigint_ext_for_small_int", "a big integer ext 67 holding 5, which fits msgpack's int: an encoder never writes it")
def _():
    return Raw([_untyped(Ext(wire.EXT_BIGINT, b"\x05"))], s.GetInternalStateReqOutput(internal_state={"value": 5}))


@_case("i_bigint_non_minimal_bytes", "a big integer ext 67 with 16 bytes for the value 1: not minimal, still unambiguous")
def _():
    return Raw([_untyped(Ext(wire.EXT_BIGINT, b"\x00" * 15 + b"\x01"))], s.GetInternalStateReqOutput(internal_state={"value": 1}))


@_case(
    "i_extra_trailing_field_with_unknown_ext",
    "an ignored extra trailing element holding an unknown ext code: msgspec skips it unread, a stricter decoder may refuse",
)
def _():
    return Raw([_body("FlushCacheReqInput", "a", None, 1.5, Ext(99, b"x"))], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@_case(
    "i_extra_trailing_field_with_invalid_utf8",
    "an ignored extra trailing element holding invalid UTF-8: skipped unread by msgspec, refused by a validating decoder",
)
def _():
    body = _body("FlushCacheReqInput", "a", None, 1.5, msgspec.Raw(b"\xa2\xff\xfe"))
    return Raw([body], s.FlushCacheReqInput(rid="a", timeout_s=1.5))


@_case(
    "i_v2_empty_out_of_band_frame",
    "an out-of-band (0,) tensor whose frame is empty: valid layout, though an encoder keeps empty buffers in band",
    wire="v2",
)
def _():
    meta = [[0], "float32", "cpu"]
    frames = [_untyped(_oob_ext(wire.EXT_OOB_TORCH_TENSOR, meta, 1)), b""]
    return Raw(frames, s.GetInternalStateReqOutput(internal_state={"value": torch.zeros(0)}))


# n_fuzz_: findings of the fuzz loop against real implementations, shrunk
# (conformance/fuzz/findings/*.json; `python -m conformance.fuzz ... --save-findings`).
# Each broke some decoder (the description says which, and how); the reference
# rejects each, so every implementation must.


def _register_fuzz_findings() -> None:
    from conformance.fuzz.findings import load_findings

    for finding in load_findings():
        if finding.reference_reason is None:
            continue  # the reference decodes it: not a rejection vector (the fuzz loop reports such cases)
        frames = [bytes.fromhex(f) for f in finding.frames]
        wire_version = "v2" if len(frames) > 1 else "v1"
        _case(f"n_fuzz_{finding.name}", finding.description, wire=wire_version, reason=finding.reference_reason[:60])(
            lambda frames=frames: frames
        )


_register_fuzz_findings()


# --- building, rendering, checking -----------------------------------------------


def _as_bytes(frames: Any) -> List[bytes]:
    if not isinstance(frames, (list, tuple)):
        raise VectorError(f"frames must be a list, got {type(frames).__name__}")
    return [bytes(memoryview(f).cast("B")) for f in frames]


def _built(case: Case) -> Tuple[List[bytes], Any]:
    result = case.build()
    if isinstance(result, msgspec.Struct):
        frames = reference_for(case.wire).encode(result)
        return _as_bytes(frames), result
    if isinstance(result, Raw):
        return _as_bytes(result.frames), result.expected
    return _as_bytes(result), None


def _decode(codec: ReferenceCodec, frames: List[bytes]) -> Tuple[Any, Optional[DecodeError]]:
    try:
        return codec.decode(frames), None
    except DecodeError as exc:
        return None, exc


def build_vector(case: Case) -> Dict[str, Any]:
    """The vector file content of ``case``, verified against the reference codec; :class:`VectorError` otherwise."""
    where = f"{case.file}"
    if case.kind not in KINDS or case.name[1:2] != "_":
        raise VectorError(f"{where}: a vector name starts with y_, n_ or i_")
    if case.wire not in WIRE_VERSIONS:
        raise VectorError(f"{where}: wire must be one of {WIRE_VERSIONS}")
    if (case.reject_reason is not None) != (case.kind == "n"):
        raise VectorError(f"{where}: n_ vectors, and only they, have a reject_reason")
    try:
        frames, value = _built(case)
    except VectorError:
        raise
    except Exception as exc:
        raise VectorError(f"{where}: building the case failed: {type(exc).__name__}: {exc}") from exc
    if case.wire == "v1" and len(frames) > 1:
        raise VectorError(f"{where}: a v1 vector has at most one frame, got {len(frames)}")
    if case.kind == "y" and value is None:
        raise VectorError(f"{where}: a y_ vector needs the value it decodes to")
    if case.kind == "n" and value is not None:
        raise VectorError(f"{where}: an n_ vector has no expected value")
    expected = to_neutral(value) if value is not None else None
    _verify(case, frames, value, expected)
    return {
        "name": case.name,
        "description": case.description,
        "wire": case.wire,
        "frames": [f.hex() for f in frames],
        "expected": expected,
        "reject_reason": case.reject_reason,
    }


def _verify(case: Case, frames: List[bytes], value: Any, expected: Any) -> None:
    decoded, error = _decode(reference_for(case.wire), frames)
    where = case.file
    if case.kind == "n":
        if error is None:
            raise VectorError(f"{where}: the reference decodes this n_ vector (to {type(decoded).__name__})")
        if case.reject_reason not in error.reason:
            raise VectorError(f"{where}: reject_reason {case.reject_reason!r} is not in the reference's reason {error.reason!r}")
        return
    if case.kind == "y" and error is not None:
        raise VectorError(f"{where}: the reference refuses this y_ vector: {error}")
    if error is None and value is not None:
        rebuilt = from_neutral(json.loads(json.dumps(expected)))
        for what, reference_value in (("the case's value", value), ("from_neutral(expected)", rebuilt)):
            diff = compare(reference_value, decoded)
            if diff is not None:
                raise VectorError(f"{where}: the reference decodes differently from {what}: {diff}")


def _format(value: Any, indent: int, prefix: int = 0) -> str:
    """JSON text of ``value``: on one line when it fits in ``_WIDTH`` columns, else one item per line."""
    compact = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    if indent + prefix + len(compact) <= _WIDTH or not isinstance(value, (list, dict)) or not value:
        return compact
    inner = " " * (indent + 2)
    if isinstance(value, list):
        items = [inner + _format(v, indent + 2) for v in value]
    else:
        items = []
        for k, v in value.items():
            key = json.dumps(k, ensure_ascii=True) + ": "
            items.append(inner + key + _format(v, indent + 2, len(key)))
    opening, closing = ("[", "]") if isinstance(value, list) else ("{", "}")
    return opening + "\n" + ",\n".join(items) + "\n" + " " * indent + closing


def render(vector: Dict[str, Any]) -> str:
    """The exact text of a vector file: ASCII JSON, stable layout, one trailing newline."""
    return _format({key: vector[key] for key in FIELDS}, 0, _WIDTH) + "\n"


def expected_files(cases: Sequence[Case] = None) -> Dict[str, str]:
    """``{"v1/y_x.json": text}`` for every case: what ``generate`` writes."""
    cases = CASES if cases is None else cases
    seen: Dict[str, Case] = {}
    for case in cases:
        if case.name in seen:
            raise VectorError(f"two cases named {case.name!r} ({seen[case.name].wire} and {case.wire})")
        seen[case.name] = case
    return {case.file: render(build_vector(case)) for case in cases}


def _on_disk(directory: str) -> Dict[str, str]:
    found: Dict[str, str] = {}
    for version in WIRE_VERSIONS:
        folder = os.path.join(directory, version)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="ascii", errors="replace", newline="") as fh:
                    found[f"{version}/{name}"] = fh.read()
    return found


def generate(directory: str = VECTORS_DIR) -> Tuple[List[str], List[str]]:
    """Write every vector under ``directory`` and delete stale ones; returns (written, removed) relative paths."""
    files = expected_files()
    current = _on_disk(directory)
    written, removed = [], []
    for rel, text in sorted(files.items()):
        if current.get(rel) != text:
            path = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="ascii", newline="\n") as fh:
                fh.write(text)
            written.append(rel)
    for rel in sorted(set(current) - set(files)):
        os.remove(os.path.join(directory, rel))
        removed.append(rel)
    return written, removed


def check(directory: str = VECTORS_DIR) -> List[str]:
    """Problems that make the files under ``directory`` differ from what ``generate`` writes (empty: up to date)."""
    files = expected_files()
    current = _on_disk(directory)
    problems = []
    for rel in sorted(set(files) | set(current)):
        if rel not in current:
            problems.append(f"{rel}: missing")
        elif rel not in files:
            problems.append(f"{rel}: no case generates it (stale file)")
        elif current[rel] != files[rel]:
            old, new = current[rel].splitlines(), files[rel].splitlines()
            diff = [line for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            first = diff[0] if diff else "(whitespace or line endings)"
            problems.append(f"{rel}: differs ({len(diff)} changed lines; first: {first[:120]})")
    return problems


# --- reading the files ---------------------------------------------------------------


@dataclass(frozen=True)
class GoldenVector:
    """One vector file as read from disk."""

    file: str  # "v1/y_flush_cache_req_input.json"
    name: str
    description: str
    wire: str
    frames: List[bytes] = field(repr=False)
    expected: Any = field(repr=False)
    reject_reason: Optional[str]

    @property
    def kind(self) -> str:
        return self.name[0]

    @property
    def filename(self) -> str:
        return os.path.basename(self.file)


def _parse(rel: str, text: str) -> GoldenVector:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{rel}: not JSON: {exc}") from None
    if not isinstance(data, dict) or list(data) != list(FIELDS):
        raise ValueError(f"{rel}: keys must be exactly {list(FIELDS)} in order")
    version, filename = rel.split("/")
    name = data["name"]
    if not isinstance(name, str) or filename != f"{name}.json" or name[:2] not in ("y_", "n_", "i_"):
        raise ValueError(f"{rel}: name must be the file name without .json and start with y_, n_ or i_")
    if data["wire"] != version:
        raise ValueError(f"{rel}: wire {data['wire']!r} differs from its directory {version!r}")
    description = data["description"]
    _check_description(rel, description)
    frames = data["frames"]
    if not isinstance(frames, list) or not all(isinstance(f, str) and f == f.lower() for f in frames):
        raise ValueError(f"{rel}: frames must be a list of lowercase hex strings")
    try:
        raw = [bytes.fromhex(f) for f in frames]
    except ValueError:
        raise ValueError(f"{rel}: a frame is not hex") from None
    kind, reason, expected = name[0], data["reject_reason"], data["expected"]
    if (kind == "n") != isinstance(reason, str) or (reason is not None and not isinstance(reason, str)):
        raise ValueError(f"{rel}: reject_reason must be a string for n_ vectors and null otherwise")
    if kind == "y" and expected is None:
        raise ValueError(f"{rel}: a y_ vector needs an expected value")
    if kind == "n" and expected is not None:
        raise ValueError(f"{rel}: an n_ vector's expected must be null")
    return GoldenVector(rel, name, description, version, raw, expected, reason)


def load_vectors(directory: str = VECTORS_DIR) -> List[GoldenVector]:
    """Every vector file under ``directory``, sorted by path; ``ValueError`` naming a malformed file."""
    return [_parse(rel, text) for rel, text in sorted(_on_disk(directory).items())]
