"""The fixed, seeded benchmark corpus: one builder per message family.

The corpus is built here from the reference schema alone (not from test
helpers), so that it stays the same when unit-test samples change: a baseline
run of an older codec and the current run measure the very same messages.
Every builder is deterministic (a fixed numpy seed) and cheap to call again.

Families
--------
``control-*``
    Small control messages (a cache flush, an abort with a finish reason).
``TokenizedGenerateReqInput-text`` / ``-mm``
    A tokenized 1024-token prompt with sampling parameters; ``-mm`` adds one
    image item (a ``1024 x 1176`` float32 pixel-patch tensor, 4.6 MiB, and
    ``mrope_positions``), as a vision-language model's tokenizer sends it.
``BatchTokenIDOutput-{1,32,256}``
    The scheduler's streamed output at batch 1, 32 and 256: logprobs (with
    ``None``), top-5 logprobs, decode ids and routed-expert tensors
    (``(tokens + 128) x 24 x 8`` int32 per request).
``BatchEmbeddingOutput-32``
    32 embeddings of 1024 floats and their pooled hidden states (4096 float32).
``live-*``
    What SGLang 0.5.23's own server sent in a live run
    (``conformance/benchmarks/recorded/*.json``, written by
    ``python -m conformance.engines.sglang.live_record``), decoded with the
    reference codec: ``live-BatchTokenIDOutput-1`` is the one-request decode
    step every token of a concurrency-1 run sends,
    ``live-TokenizedGenerateReqInput`` a 1024-token request, and so on.
``tensor-<size>``
    One float32 tensor of ``size`` bytes in the smallest message that carries
    one (``BatchEmbeddingOutput.pooled_hidden_states``): 1 KiB to 256 MiB.
    Sizes above ``IPC_BENCH_MAX_TENSOR`` (default ``64MiB``) are left out;
    ``IPC_BENCH_MAX_TENSOR=256MiB`` is the full run.
"""

from __future__ import annotations

import functools
import os
import re
from array import array
from typing import Any, Callable, Dict, List

import numpy as np
import torch

from reference_codec import schema as s

__all__ = [
    "FAMILIES",
    "MESSAGE_FAMILIES",
    "TENSOR_SIZES",
    "ALL_TENSOR_SIZES",
    "build",
    "size_label",
    "parse_size",
    "recorded_families",
    "tensor_message",
    "payload_tensor_bytes",
]

SEED = 20240917


def size_label(nbytes: int) -> str:
    """``1024 -> '1KiB'``, ``268435456 -> '256MiB'``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


def parse_size(text: str) -> int:
    """``'64MiB' -> 67108864``; plain integers are bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*(B|KiB|MiB|GiB)?\s*", text)
    if not match:
        raise ValueError(f"size must look like 1024, 64KiB, 64MiB or 1GiB, got {text!r}")
    shift = {"B": 0, None: 0, "KiB": 10, "MiB": 20, "GiB": 30}[match.group(2)]
    return int(match.group(1)) << shift


#: Every single-tensor size of the full run.
ALL_TENSOR_SIZES: List[int] = [1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20]
#: The sizes of this run (``IPC_BENCH_MAX_TENSOR`` caps them; default 64 MiB).
TENSOR_SIZES: List[int] = [n for n in ALL_TENSOR_SIZES if n <= parse_size(os.environ.get("IPC_BENCH_MAX_TENSOR", "64MiB"))]


# --- control ----------------------------------------------------------------


def flush_cache() -> s.FlushCacheReqInput:
    return s.FlushCacheReqInput(rid="flush-0", timeout_s=1.5)


def abort() -> s.AbortReq:
    return s.AbortReq(
        rid="req-17",
        finished_reason={"type": "abort", "message": "client disconnected", "status_code": 499},
        abort_message="client disconnected",
    )


# --- tokenized requests -----------------------------------------------------


def _sampling_params() -> s.SamplingParams:
    return s.SamplingParams(
        max_new_tokens=200,
        stop=["</s>", "<|im_end|>"],
        stop_token_ids={2, 151645},
        temperature=0.7,
        top_p=0.9,
        top_k=50,
        repetition_penalty=1.05,
        logit_bias={"1234": -5.0},
    )


def tokenized_generate(multimodal: bool = False) -> s.TokenizedGenerateReqInput:
    rng = np.random.default_rng(SEED)
    input_ids = array("q", rng.integers(0, 150_000, 1024).tolist())
    mm_inputs = None
    if multimodal:
        patches = torch.from_numpy(rng.standard_normal((1024, 1176), dtype=np.float32))
        item = s.MultimodalDataItem(
            modality=s.Modality.IMAGE,
            hash=int(rng.integers(0, 2**63)),
            pad_value=151655,
            offsets=[(15, 15 + 256)],
            feature=patches,
            model_specific_data={"image_grid_thw": torch.tensor([[1, 32, 32]])},
        )
        mm_inputs = s.MultimodalProcessorOutput(
            mm_items=[item],
            im_start_id=151652,
            im_end_id=151653,
            mrope_positions=torch.from_numpy(rng.integers(0, 1024, (3, 1024), dtype=np.int64)),
            mrope_position_delta=torch.tensor([[-768]]),
        )
    return s.TokenizedGenerateReqInput(
        rid="req-4f1c2a9e0b7d4c3f",
        input_text="Summarise the following document. " * 120,
        input_ids=input_ids,
        input_embeds=None,
        mm_inputs=mm_inputs,
        token_type_ids=None,
        sampling_params=_sampling_params(),
        return_logprob=True,
        logprob_start_len=-1,
        top_logprobs_num=5,
        token_ids_logprob=None,
        stream=True,
    )


# --- scheduler outputs ------------------------------------------------------


def batch_token_id_output(batch: int) -> s.BatchTokenIDOutput:
    """Logprobs (some ``None``), top-5 logprobs, decode ids and routed-expert tensors for ``batch`` requests."""
    rng = np.random.default_rng(SEED + batch)
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


def _embedding_output(embeddings: list, pooled: list) -> s.BatchEmbeddingOutput:
    batch = len(pooled)
    return s.BatchEmbeddingOutput(
        rids=[f"emb-{i}" for i in range(batch)],
        http_worker_ipcs=[None] * batch,
        finished_reasons=[{"type": "stop", "matched": 2}] * batch,
        embeddings=embeddings,
        prompt_tokens=[512] * batch,
        cached_tokens=[0] * batch,
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
        pooled_hidden_states=pooled,
    )


def batch_embedding_output(batch: int = 32) -> s.BatchEmbeddingOutput:
    rng = np.random.default_rng(SEED + 7)
    return _embedding_output(
        [rng.normal(size=1024).tolist() for _ in range(batch)],
        [torch.from_numpy(rng.standard_normal(4096, dtype=np.float32)) for _ in range(batch)],
    )


def tensor_message(nbytes: int) -> s.BatchEmbeddingOutput:
    """The smallest message carrying one float32 tensor of ``nbytes`` bytes."""
    return _embedding_output([[]], [torch.arange(nbytes // 4, dtype=torch.float32)])


def payload_tensor_bytes(msg: Any) -> int:
    """Bytes of the tensor payload a single-tensor message carries (for memcpy and memory yardsticks)."""
    return sum(t.numel() * t.element_size() for t in msg.pooled_hidden_states)


MESSAGE_FAMILIES: Dict[str, Callable[[], Any]] = {
    "control-FlushCacheReqInput": flush_cache,
    "control-AbortReq": abort,
    "TokenizedGenerateReqInput-text": lambda: tokenized_generate(False),
    "TokenizedGenerateReqInput-mm": lambda: tokenized_generate(True),
    "BatchTokenIDOutput-1": lambda: batch_token_id_output(1),
    "BatchTokenIDOutput-32": lambda: batch_token_id_output(32),
    "BatchTokenIDOutput-256": lambda: batch_token_id_output(256),
    "BatchEmbeddingOutput-32": batch_embedding_output,
}

#: Recorded frames (``live-*`` families), one JSON file per engine release.
RECORDED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recorded")


def _recorded(frame_hex: str) -> Any:
    from reference_codec import ReferenceCodec

    return ReferenceCodec().decode([bytes.fromhex(frame_hex)])


def recorded_families(folder: str = RECORDED_DIR) -> Dict[str, Callable[[], Any]]:
    """``live-*`` family -> builder (the reference codec's decode of the recorded frame), from every ``*.json`` in ``folder``."""
    import json

    found: Dict[str, Callable[[], Any]] = {}
    if not os.path.isdir(folder):
        return found
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                for family, frame_hex in json.load(fh)["frames"].items():
                    found[family] = functools.partial(_recorded, frame_hex)
    return found


MESSAGE_FAMILIES.update(recorded_families())

#: Family name -> builder, message families first, then this run's tensor sizes.
FAMILIES: Dict[str, Callable[[], Any]] = dict(MESSAGE_FAMILIES)
for _n in TENSOR_SIZES:
    FAMILIES[f"tensor-{size_label(_n)}"] = functools.partial(tensor_message, _n)


@functools.lru_cache(maxsize=2)
def build(family: str) -> Any:
    """The family's message, built once per process (the builders are deterministic)."""
    return FAMILIES[family]()
