"""The request stream a live run sends: deterministic, drawn from a seeded ``random.Random``.

A seeded generator rather than the project's Hypothesis strategies: every
request must be *valid for the engine* (or invalid in one chosen way), and
the same seed must give the same stream in every process and run, which a
plain ``random.Random`` does cheaply and exactly.

The mix, for ``n`` items: mostly generation requests (greedy and seeded
sampling, logprobs from any start, top-k and chosen-token logprobs,
streaming, hidden states, every stop condition), embedding requests, cache
flushes, aborts, requests the scheduler must refuse (an out-of-vocabulary
id, an invalid sampling parameter, a prompt too long), and frames that are
no message at all (junk the scheduler must count and survive).
"""

from __future__ import annotations

import dataclasses
import random
from array import array
from typing import Any, List, Literal, Optional

from reference_codec import schema as s

from . import tokenizer
from .model import MAX_SEQ_LEN

__all__ = ["WorkItem", "generate_workload", "generate_decode_heavy_workload", "WORKLOADS", "describe", "JUNK_FRAME"]

#: Not a message in any codec: 0xc1 is never used in msgpack and is no pickle opcode.
JUNK_FRAME = b"\xc1\xc1 not a message"

Kind = Literal["generate", "embedding", "flush", "junk"]

_RARE = ("junk", "abort", "invalid", "embedding", "flush")
#: Cumulative shares of the item kinds (the rest are valid generation requests).
_SHARES = (("flush", 0.05), ("junk", 0.08), ("embedding", 0.18), ("abort", 0.23), ("invalid", 0.31))
_KINDS = {i: name for i, (name, _) in enumerate(_SHARES)}
_KINDS[len(_SHARES)] = "generate"


def _pick(roll: float) -> int:
    for i, (_, upto) in enumerate(_SHARES):
        if roll < upto:
            return i
    return len(_SHARES)


@dataclasses.dataclass(frozen=True)
class WorkItem:
    """One unit of the stream: the messages to send, in order, and what answers them.

    ``kind`` says what the client waits for under ``rid``: streamed
    ``BatchStrOutput`` rows until one is finished (``generate``), one
    ``BatchEmbeddingOutput`` row (``embedding``), one ``FlushCacheReqOutput``
    (``flush``), or nothing (``junk``: ``messages`` holds raw frames).
    ``stream`` is true when the answer is streamed token by token.
    """

    rid: str
    kind: Kind
    messages: List[Any]
    stream: bool = False


def generate_workload(n: int, seed: int = 0) -> List[WorkItem]:
    """``n`` work items, the same for the same ``(n, seed)``; item ``i`` has rid ``req-{i}``."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    rng = random.Random(seed)
    # One of each rare kind at a seeded position, so that even a short stream exercises them all.
    forced = dict(zip(rng.sample(range(n), min(n, len(_RARE))), _RARE))
    items = []
    for i in range(n):
        rid = f"req-{i}"
        kind = forced.get(i) or _KINDS[_pick(rng.random())]
        if kind == "flush":
            items.append(WorkItem(rid, "flush", [s.FlushCacheReqInput(rid=rid)]))
        elif kind == "junk":
            items.append(WorkItem(rid, "junk", [[JUNK_FRAME]]))
        elif kind == "embedding":
            items.append(WorkItem(rid, "embedding", [_embedding(rng, rid)]))
        elif kind == "abort":
            req = _generate(rng, rid)
            assert req.input_ids is not None  # _generate always gives the prompt's token ids
            req.sampling_params.max_new_tokens = MAX_SEQ_LEN - len(req.input_ids)
            req.sampling_params.ignore_eos = True
            # The abort goes first: aborting a request already running would
            # cut it after a timing-dependent number of tokens.
            abort = s.AbortReq(rid=rid, abort_message=f"client aborted {rid}")
            items.append(WorkItem(rid, "generate", [abort, req], stream=req.stream))
        else:
            req = _generate(rng, rid)
            if kind == "invalid":
                _break(rng, req)
            items.append(WorkItem(rid, "generate", [req], stream=req.stream))
    return items


def generate_decode_heavy_workload(n: int, seed: int = 0) -> List[WorkItem]:
    """``n`` streamed generation requests that make the output path carry the most per token.

    Every request streams, asks for logprobs of its prompt and of every output
    token with 5 to 20 top-k logprobs (a quarter also for 1 to 8 chosen ids),
    ignores EOS and generates 48 to 96 tokens from a prompt of 8 to 24 ids, so
    each scheduler step sends a large ``BatchTokenIDOutput`` (one row per
    running request) and each client chunk a ``BatchStrOutput`` with logprobs.
    Valid for the live model too; with ``--ipc-bound`` its cost is IPC.
    """
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    rng = random.Random(seed)
    items = []
    for i in range(n):
        rid = f"req-{i}"
        ids = array("q", [rng.randrange(256) for _ in range(rng.randint(8, 24))])
        req = _text_request(
            rid,
            ids,
            sampling_params=s.SamplingParams(max_new_tokens=rng.randint(48, 96), temperature=0.0, ignore_eos=True),
            return_logprob=True,
            logprob_start_len=0,
            top_logprobs_num=rng.randint(5, 20),
            token_ids_logprob=rng.sample(range(tokenizer.VOCAB_SIZE), rng.randint(1, 8)) if rng.random() < 0.25 else None,
            stream=True,
            return_hidden_states=False,
        )
        items.append(WorkItem(rid, "generate", [req], stream=True))
    return items


#: Workload name -> generator ``(n, seed) -> items``, for ``python -m conformance.live --workload``.
WORKLOADS = {"mixed": generate_workload, "decode-heavy": generate_decode_heavy_workload}


def _prompt(rng: random.Random, low: int = 1, high: int = 24) -> array:
    text = "".join(rng.choice("abcdefgh ijklmnop,.é🙂") for _ in range(rng.randint(low, high)))
    ids = tokenizer.encode(text)[: high * 2]
    if rng.random() < 0.5:
        ids = [tokenizer.BOS_ID] + ids
    return array("q", ids)


def _sampling(rng: random.Random) -> s.SamplingParams:
    greedy = rng.random() < 0.4
    params = s.SamplingParams(
        max_new_tokens=rng.randint(0, 16) if rng.random() < 0.95 else None,
        temperature=0.0 if greedy else rng.choice([0.5, 0.8, 1.0, 1.3]),
        top_p=rng.choice([1.0, 1.0, 0.9, 0.5]),
        top_k=rng.choice([1 << 30, 1 << 30, 5, 40, -1]),
        min_p=rng.choice([0.0, 0.0, 0.05]),
        ignore_eos=rng.random() < 0.2,
        skip_special_tokens=rng.random() < 0.8,
        spaces_between_special_tokens=rng.random() < 0.8,
        no_stop_trim=rng.random() < 0.2,
        sampling_seed=rng.randint(0, 2**31) if not greedy and rng.random() < 0.7 else None,
    )
    if rng.random() < 0.3:
        params.stop_token_ids = set(rng.sample(range(tokenizer.VOCAB_SIZE), rng.randint(1, 24)))
    if rng.random() < 0.3:
        stops = [chr(c) for c in rng.sample(range(0x21, 0x7F), rng.randint(1, 12))]
        params.stop = stops if len(stops) > 1 or rng.random() < 0.5 else stops[0]
    return params


def _generate(rng: random.Random, rid: str) -> s.TokenizedGenerateReqInput:
    ids = _prompt(rng)
    return_logprob = rng.random() < 0.6
    return _text_request(
        rid,
        ids,
        sampling_params=_sampling(rng),
        return_logprob=return_logprob,
        logprob_start_len=rng.choice([-1, 0, 0, len(ids) - 1, rng.randrange(len(ids))]),
        top_logprobs_num=rng.choice([0, 0, 1, 3, 5]) if return_logprob else 0,
        token_ids_logprob=rng.sample(range(tokenizer.VOCAB_SIZE), rng.randint(1, 4)) if return_logprob and rng.random() < 0.4 else None,
        stream=rng.random() < 0.5,
        return_hidden_states=rng.choice([False, False, True, "last"]),
    )


def _text_request(rid: str, ids: array, **fields: Any) -> s.TokenizedGenerateReqInput:
    """A generation request for the token ``ids`` (their text alongside), without embeds, multimodal inputs or token types."""
    return s.TokenizedGenerateReqInput(
        rid=rid, input_text=tokenizer.decode(ids), input_ids=ids, input_embeds=None, mm_inputs=None, token_type_ids=None, **fields
    )


def _break(rng: random.Random, req: s.TokenizedGenerateReqInput) -> None:
    """Make ``req`` invalid in one way the scheduler must refuse with an error response."""
    how = rng.randrange(5)
    sp = req.sampling_params
    if how == 0:
        assert req.input_ids is not None  # a request from _generate, which always gives token ids
        req.input_ids = array("q", list(req.input_ids) + [tokenizer.VOCAB_SIZE + rng.randrange(1000)])
    elif how == 1:
        sp.temperature = -rng.choice([0.5, 1.0])
    elif how == 2:
        sp.top_p = rng.choice([0.0, 1.5])
    elif how == 3:
        sp.top_k = 0
    else:
        sp.max_new_tokens = MAX_SEQ_LEN


def _embedding(rng: random.Random, rid: str) -> s.TokenizedEmbeddingReqInput:
    ids = _prompt(rng)
    if rng.random() < 0.1:
        ids = array("q", [-1] + list(ids))
    return s.TokenizedEmbeddingReqInput(
        rid=rid,
        input_text=tokenizer.decode(i for i in ids if i >= 0),
        input_ids=ids,
        mm_inputs=None,
        token_type_ids=None,
        sampling_params=s.SamplingParams(max_new_tokens=0),
        dimensions=rng.choice([None, None, 8, 16]),
        return_pooled_hidden_states=rng.random() < 0.5,
    )


def describe(item: WorkItem) -> Optional[str]:
    """A one-line summary of the item, for mismatch reports."""
    if item.kind != "generate":
        return item.kind
    req = item.messages[-1]
    sp = req.sampling_params
    parts = [
        f"{len(req.input_ids)} ids",
        "greedy" if sp.temperature == 0 else f"T={sp.temperature} seed={sp.sampling_seed}",
        f"max_new={sp.max_new_tokens}",
    ]
    if req.return_logprob:
        parts.append(f"logprob from {req.logprob_start_len} top={req.top_logprobs_num}")
    if req.stream:
        parts.append("stream")
    if req.return_hidden_states:
        parts.append(f"hidden={req.return_hidden_states}")
    if len(item.messages) > 1:
        parts.append("aborted")
    return ", ".join(parts)
