"""The scheduler: admits tokenized requests, runs the model, streams token ids onward.

With ``--ipc-bound`` the model is :class:`~conformance.live.precomputed.PrecomputedLM`:
the same loop, batches and messages, with the model's outputs read from tables.

:class:`Scheduler` is the engine logic, free of sockets, so that tests can
drive it in-process; :func:`serve` is the process around it (one pull
socket in, pushes to the detokenizer and, for control replies, the client).

Contracts that make two runs comparable bit for bit:

- every request is computed on its own (:class:`~conformance.live.model.TinyLM`
  runs one sequence at a time) and samples from its own seeded generator, so
  a request's tokens, logprobs and hidden states do not depend on what else
  is in the batch or when it arrived;
- each loop iteration advances every running request by exactly one token,
  and a streaming request gets one row per token, so its chunking does not
  depend on timing either;
- an ``AbortReq`` for a request not seen yet is remembered, and the request
  is refused when it arrives (finish reason ``abort``, no tokens): the
  workload sends aborts first, because aborting a running request would cut
  it after a timing-dependent number of tokens (still supported, for
  realism, but never compared);
- invalid requests get an error row (finish reason ``abort``, status 400,
  a message naming the field), never an exception.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from reference_codec import schema as s

from . import sampler, tokenizer
from .model import HIDDEN_SIZE, MAX_SEQ_LEN, TinyLM
from .precomputed import PrecomputedLM

__all__ = ["Scheduler", "serve", "abort_reason", "error_reason"]

Outgoing = Tuple[str, Any]  # (destination: "detokenizer" | "client", message)


def abort_reason(message: str, status_code: Optional[int] = None, err_type: Optional[str] = None) -> Dict[str, Any]:
    """SGLang's ``FINISH_ABORT(...).to_json()``."""
    return {"type": "abort", "message": message, "status_code": status_code, "err_type": err_type}


def error_reason(message: str) -> Dict[str, Any]:
    """The finish reason of a request refused as invalid."""
    return abort_reason(message, 400, "BadRequestError")


@dataclasses.dataclass(eq=False)
class _Running:
    msg: s.TokenizedGenerateReqInput
    prompt: List[int]
    max_new: int
    generator: torch.Generator
    stop_ids: frozenset
    stop_strs: Tuple[str, ...]
    output: List[int] = dataclasses.field(default_factory=list)
    sent: int = 0
    prefilled: bool = False
    input_sent: bool = False
    input_lp: Optional[Dict[str, list]] = None
    out_lp: Dict[str, list] = dataclasses.field(default_factory=lambda: {k: [] for k in _OUT_KEYS})
    hidden: List[List[float]] = dataclasses.field(default_factory=list)
    finished: Optional[Dict[str, Any]] = None


_OUT_KEYS: Tuple[str, ...] = ("val", "idx", "top_val", "top_idx", "ids_val", "ids_idx")


class Scheduler:
    """Engine logic: ``handle(msg)`` for each received message, ``step()`` once per loop.

    Both return the messages to send, as ``(destination, message)`` pairs,
    destination ``"detokenizer"`` or ``"client"``. ``busy`` is true while a
    request runs or an output waits (the loop must not block then).
    """

    def __init__(self, model: Union[TinyLM, PrecomputedLM]):
        self.model = model
        self.running: Dict[str, _Running] = {}
        self.aborted: Dict[str, s.AbortReq] = {}
        self.unexpected_messages = 0
        self.steps = 0
        self._token_rows: List[Dict[str, Any]] = []
        self._embedding_rows: List[Dict[str, Any]] = []

    @property
    def busy(self) -> bool:
        return bool(self.running or self._token_rows or self._embedding_rows)

    # --- receiving --------------------------------------------------------

    def handle(self, msg: Any) -> List[Outgoing]:
        if isinstance(msg, s.TokenizedGenerateReqInput):
            self._admit(msg)
        elif isinstance(msg, s.TokenizedEmbeddingReqInput):
            self._embed(msg)
        elif isinstance(msg, s.AbortReq):
            self._abort(msg)
        elif isinstance(msg, s.FlushCacheReqInput):
            # No cache to flush; the reply must still come back, deterministically.
            return [("client", s.FlushCacheReqOutput(rid=msg.rid, http_worker_ipc=msg.http_worker_ipc, success=True))]
        else:
            self.unexpected_messages += 1
        return []

    def _admit(self, msg: s.TokenizedGenerateReqInput) -> None:
        rid = msg.rid or ""
        if rid in self.aborted:
            abort = self.aborted.pop(rid)
            reason = abort.finished_reason or abort_reason(abort.abort_message or "aborted by the client")
            self._token_rows.append(_refused_row(msg, reason))
            return
        problem, max_new = _validate(msg)
        if problem is not None:
            self._token_rows.append(_refused_row(msg, error_reason(problem)))
            return
        assert msg.input_ids is not None  # _validate refuses a request without input_ids
        sp = msg.sampling_params
        stop = sp.stop if sp.stop is not None else ()
        self.running[rid] = _Running(
            msg=msg,
            prompt=list(msg.input_ids),
            max_new=max_new,
            generator=sampler.request_generator(rid, sp.sampling_seed),
            stop_ids=frozenset(sp.stop_token_ids or ()),
            stop_strs=(stop,) if isinstance(stop, str) else tuple(stop),
        )

    def _abort(self, msg: s.AbortReq) -> None:
        targets = list(self.running) if msg.abort_all else [msg.rid] if msg.rid is not None else []
        for rid in targets:
            req = self.running.get(rid)
            if req is None:
                self.aborted[rid] = msg
                continue
            req.finished = msg.finished_reason or abort_reason(msg.abort_message or "aborted by the client")
            self._token_rows.append(self._row(req))
            del self.running[rid]

    def _embed(self, msg: s.TokenizedEmbeddingReqInput) -> None:
        ids = list(msg.input_ids) if msg.input_ids is not None else []
        problem = _ids_problem(ids, "input_ids") or (
            "mm_inputs are not supported by the live model" if msg.mm_inputs is not None else None
        )
        if problem is None and msg.dimensions is not None and not 0 < msg.dimensions <= HIDDEN_SIZE:
            problem = f"dimensions must be in 1..{HIDDEN_SIZE}, got {msg.dimensions}"
        row: Dict[str, Any] = {"rid": msg.rid, "ipc": msg.http_worker_ipc, "prompt_tokens": len(ids)}
        if problem is not None:
            row.update(finished=error_reason(problem), embedding=[], pooled=None)
        else:
            hidden, _ = self.model.forward(ids)
            pooled = hidden.mean(0)
            if msg.dimensions is not None:
                pooled = pooled[: msg.dimensions]
            row.update(
                finished={"type": "length", "length": 0},
                embedding=pooled.tolist(),
                pooled=pooled.clone() if msg.return_pooled_hidden_states else None,
            )
        self._embedding_rows.append(row)

    # --- one iteration ----------------------------------------------------

    def step(self) -> List[Outgoing]:
        """Advance every running request by one token; return this iteration's output batches."""
        for rid in list(self.running):
            req = self.running[rid]
            self._advance(req)
            if req.finished is not None:
                del self.running[rid]
            if req.finished is not None or (req.msg.stream and len(req.output) > req.sent):
                self._token_rows.append(self._row(req))
        self.steps += 1
        out: List[Outgoing] = []
        if self._token_rows:
            out.append(("detokenizer", _token_batch(self._token_rows)))
            self._token_rows = []
        if self._embedding_rows:
            out.append(("detokenizer", _embedding_batch(self._embedding_rows)))
            self._embedding_rows = []
        return out

    def _advance(self, req: _Running) -> None:
        if isinstance(self.model, PrecomputedLM):
            return self._advance_from_tables(req, self.model)
        msg, sp = req.msg, req.msg.sampling_params
        hidden, logits = self.model.forward(req.prompt + req.output)
        if not req.prefilled:
            req.prefilled = True
            if msg.return_logprob and msg.logprob_start_len >= 0:
                prompt_lp = sampler.logprobs(logits[: len(req.prompt)])
                req.input_lp = _input_logprobs(msg, req.prompt, lambda p: _TorchRow(prompt_lp[p]))
        if req.max_new == 0:
            req.finished = {"type": "length", "length": 0}
            return
        lp = sampler.logprobs(logits[-1])
        token = sampler.sample(
            logits[-1], temperature=sp.temperature, top_k=sp.top_k, top_p=sp.top_p, min_p=sp.min_p, generator=req.generator
        )
        req.output.append(token)
        if msg.return_logprob:
            _append_logprobs(req.out_lp, msg, _TorchRow(lp), token)
        if msg.return_hidden_states:
            req.hidden.append(hidden[-1].tolist())
        req.finished = _finish(req, token)

    def _advance_from_tables(self, req: _Running, tables: PrecomputedLM) -> None:
        """:meth:`_advance` with the model's outputs read from ``tables`` (``--ipc-bound``)."""
        msg, prompt = req.msg, req.prompt
        if not req.prefilled:
            req.prefilled = True
            if msg.return_logprob and msg.logprob_start_len >= 0:
                req.input_lp = _input_logprobs(msg, prompt, lambda p: tables.row(prompt[p], p))
        if req.max_new == 0:
            req.finished = {"type": "length", "length": 0}
            return
        position = len(prompt) + len(req.output) - 1
        previous = req.output[-1] if req.output else prompt[-1]
        row = tables.row(previous, position)
        token = row.top_ids[0]
        req.output.append(token)
        if msg.return_logprob:
            _append_logprobs(req.out_lp, msg, row, token)
        if msg.return_hidden_states:
            req.hidden.append(tables.hidden(previous, position))
        req.finished = _finish(req, token)

    def _row(self, req: _Running) -> Dict[str, Any]:
        msg, sp = req.msg, req.msg.sampling_params
        start = 0 if not msg.stream else req.sent
        row: Dict[str, Any] = {
            "rid": msg.rid,
            "ipc": msg.http_worker_ipc,
            "finished": req.finished,
            "decode_ids": array("q", req.output),
            "read_offset": start,
            "output_ids": array("q", req.output[start:]),
            "sp": sp,
            "prompt_tokens": len(req.prompt),
            "completion_tokens": len(req.output),
        }
        if msg.return_logprob:
            first = not req.input_sent
            req.input_sent = True
            inp = req.input_lp if (first and req.input_lp is not None) else None
            o = req.out_lp
            row["input_val"] = inp["val"] if inp else []
            row["input_idx"] = inp["idx"] if inp else []
            row["output_val"], row["output_idx"] = o["val"][start:], o["idx"][start:]
            if msg.top_logprobs_num > 0:
                row["input_top_val"] = inp["top_val"] if inp else []
                row["input_top_idx"] = inp["top_idx"] if inp else []
                row["output_top_val"], row["output_top_idx"] = o["top_val"][start:], o["top_idx"][start:]
            if msg.token_ids_logprob is not None:
                row["input_ids_val"] = inp["ids_val"] if inp else []
                row["input_ids_idx"] = inp["ids_idx"] if inp else []
                row["output_ids_val"], row["output_ids_idx"] = o["ids_val"][start:], o["ids_idx"][start:]
        if msg.return_hidden_states == "last":
            row["hidden"] = req.hidden[-1:] if req.finished is not None else []
        elif msg.return_hidden_states:
            row["hidden"] = req.hidden[start:]
        req.sent = len(req.output)
        return row


# --- validation and finishing ------------------------------------------------


def _ids_problem(ids: Sequence[int], name: str) -> Optional[str]:
    if not ids:
        return f"{name} must not be empty"
    for i, t in enumerate(ids):
        if not 0 <= t < tokenizer.VOCAB_SIZE:
            return f"{name}[{i}] = {t} is out of the vocabulary [0, {tokenizer.VOCAB_SIZE})"
    return None


def _validate(msg: s.TokenizedGenerateReqInput) -> Tuple[Optional[str], int]:
    """``(problem or None, max_new_tokens resolved)``; the first problem found, in field order."""
    ids = list(msg.input_ids) if msg.input_ids is not None else []
    problem = _ids_problem(ids, "input_ids")
    if problem:
        return problem, 0
    if msg.input_embeds is not None or msg.mm_inputs is not None:
        return "input_embeds and mm_inputs are not supported by the live model", 0
    sp = msg.sampling_params
    max_new = sp.max_new_tokens if sp.max_new_tokens is not None else MAX_SEQ_LEN - len(ids)
    checks = [
        (max_new < 0, f"max_new_tokens must be >= 0, got {max_new}"),
        (len(ids) + max_new > MAX_SEQ_LEN, f"{len(ids)} input + {max_new} new tokens exceed the context length {MAX_SEQ_LEN}"),
        (not sp.temperature >= 0.0, f"temperature must be >= 0, got {sp.temperature}"),
        (not 0.0 < sp.top_p <= 1.0, f"top_p must be in (0, 1], got {sp.top_p}"),
        (sp.top_k == 0 or sp.top_k < -1, f"top_k must be -1 or >= 1, got {sp.top_k}"),
        (not 0.0 <= sp.min_p <= 1.0, f"min_p must be in [0, 1], got {sp.min_p}"),
        (sp.n != 1, f"n must be 1, got {sp.n}"),
        (msg.top_logprobs_num < 0, f"top_logprobs_num must be >= 0, got {msg.top_logprobs_num}"),
        (
            msg.return_logprob and msg.logprob_start_len >= len(ids),
            f"logprob_start_len ({msg.logprob_start_len}) must be less than the input length ({len(ids)})",
        ),
    ]
    for failed, text in checks:
        if failed:
            return text, max_new
    if msg.token_ids_logprob is not None:
        problem = _ids_problem(msg.token_ids_logprob, "token_ids_logprob")
        if problem:
            return problem, max_new
    return None, max_new


def _finish(req: _Running, token: int) -> Optional[Dict[str, Any]]:
    sp = req.msg.sampling_params
    if len(req.output) >= req.max_new:
        return {"type": "length", "length": req.max_new}
    if token == tokenizer.EOS_ID and not sp.ignore_eos:
        return {"type": "stop", "matched": token}
    if token in req.stop_ids:
        return {"type": "stop", "matched": token}
    if req.stop_strs:
        text = tokenizer.decode(req.output)
        for stop in req.stop_strs:
            if stop and stop in text:
                return {"type": "stop", "matched": stop}
    return None


class _TorchRow:
    """A float64 logprob row of the live model, read as :class:`~conformance.live.precomputed.LogprobRow` is."""

    __slots__ = ("row",)

    def __init__(self, row: torch.Tensor):
        self.row = row

    def value(self, token: int) -> float:
        return self.row[token].item()

    def top(self, k: int) -> Tuple[List[float], List[int]]:
        top = self.row.topk(k)
        return top.values.tolist(), top.indices.tolist()


def _input_logprobs(msg: s.TokenizedGenerateReqInput, prompt: List[int], row_after: Callable[[int], Any]) -> Dict[str, list]:
    """Logprobs of prompt positions ``logprob_start_len..``; position 0 has none (``None``).

    ``row_after(p)`` is the logprob row predicting position ``p + 1``.
    """
    out: Dict[str, list] = {k: [] for k in _OUT_KEYS}
    for p in range(msg.logprob_start_len, len(prompt)):
        out["idx"].append(prompt[p])
        if p == 0:
            out["val"].append(None)
            out["top_val"].append(None)
            out["top_idx"].append(None)
            out["ids_val"].append(None)
            out["ids_idx"].append(None)
            continue
        _append_logprobs(out, msg, row_after(p - 1), prompt[p], with_index=False)
    return out


def _append_logprobs(out: Dict[str, list], msg: s.TokenizedGenerateReqInput, row: Any, token: int, with_index: bool = True) -> None:
    """One position's logprob entries: the token's, the top-k (if asked) and the requested ids' (if any).

    ``row`` has ``value(token)`` and ``top(k) -> (values, ids)`` (:class:`_TorchRow` or a precomputed row).
    """
    out["val"].append(row.value(token))
    if with_index:
        out["idx"].append(token)
    if msg.top_logprobs_num > 0:
        values, ids = row.top(msg.top_logprobs_num)
        out["top_val"].append(values)
        out["top_idx"].append(ids)
    if msg.token_ids_logprob is not None:
        out["ids_val"].append([row.value(t) for t in msg.token_ids_logprob])
        out["ids_idx"].append(list(msg.token_ids_logprob))


def _refused_row(msg: s.TokenizedGenerateReqInput, reason: Dict[str, Any]) -> Dict[str, Any]:
    n = len(msg.input_ids) if msg.input_ids is not None else 0
    return {
        "rid": msg.rid,
        "ipc": msg.http_worker_ipc,
        "finished": reason,
        "decode_ids": array("q"),
        "read_offset": 0,
        "output_ids": array("q"),
        "sp": msg.sampling_params,
        "prompt_tokens": n,
        "completion_tokens": 0,
    }


# --- batches -------------------------------------------------------------------


def _token_batch(rows: List[Dict[str, Any]]) -> s.BatchTokenIDOutput:
    """One ``BatchTokenIDOutput``; a field a row does not carry is ``None`` in that row."""

    def col(key: str) -> List[Any]:
        return [r.get(key) for r in rows]

    return s.BatchTokenIDOutput(
        rids=col("rid"),
        http_worker_ipcs=col("ipc"),
        finished_reasons=col("finished"),
        decoded_texts=["" for _ in rows],
        decode_ids=col("decode_ids"),
        read_offsets=col("read_offset"),
        output_ids=col("output_ids"),
        skip_special_tokens=[r["sp"].skip_special_tokens for r in rows],
        spaces_between_special_tokens=[r["sp"].spaces_between_special_tokens for r in rows],
        no_stop_trim=[r["sp"].no_stop_trim for r in rows],
        prompt_tokens=col("prompt_tokens"),
        reasoning_tokens=[0 for _ in rows],
        completion_tokens=col("completion_tokens"),
        cached_tokens=[0 for _ in rows],
        input_token_logprobs_val=col("input_val"),
        input_token_logprobs_idx=col("input_idx"),
        output_token_logprobs_val=col("output_val"),
        output_token_logprobs_idx=col("output_idx"),
        input_top_logprobs_val=col("input_top_val"),
        input_top_logprobs_idx=col("input_top_idx"),
        output_top_logprobs_val=col("output_top_val"),
        output_top_logprobs_idx=col("output_top_idx"),
        input_token_ids_logprobs_val=col("input_ids_val"),
        input_token_ids_logprobs_idx=col("input_ids_idx"),
        output_token_ids_logprobs_val=col("output_ids_val"),
        output_token_ids_logprobs_idx=col("output_ids_idx"),
        output_token_entropy_val=None,
        output_token_sampling_mask=None,
        output_hidden_states=col("hidden"),
        routed_experts=None,
        indexer_topk=None,
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
    )


def _embedding_batch(rows: List[Dict[str, Any]]) -> s.BatchEmbeddingOutput:
    return s.BatchEmbeddingOutput(
        rids=[r["rid"] for r in rows],
        http_worker_ipcs=[r["ipc"] for r in rows],
        finished_reasons=[r["finished"] for r in rows],
        embeddings=[r["embedding"] for r in rows],
        prompt_tokens=[r["prompt_tokens"] for r in rows],
        cached_tokens=[0 for _ in rows],
        placeholder_tokens_idx=None,
        placeholder_tokens_val=None,
        pooled_hidden_states=[r["pooled"] for r in rows],
    )


# --- the process -----------------------------------------------------------------


def serve(config, stop, reports) -> None:
    """Process entry point: run the scheduler until ``stop`` is set (see :mod:`conformance.live.process`)."""
    from .process import Hop

    with Hop("scheduler", config, stop, reports) as hop:
        model = PrecomputedLM(config.device, config.model_seed) if config.ipc_bound else TinyLM(config.device, config.model_seed)
        scheduler = Scheduler(model)
        inbox = hop.bind(config.scheduler_addr)
        outboxes = {"detokenizer": hop.connect(config.detokenizer_addr), "client": hop.connect(config.client_addr)}
        hop.ready()
        while not hop.stopping():
            for msg in hop.receive(inbox, block=not scheduler.busy):
                for dest, out in scheduler.handle(msg):
                    hop.send(outboxes[dest], out)
            for dest, out in scheduler.step() if scheduler.busy else ():
                hop.send(outboxes[dest], out)
        hop.stats.update(
            steps=scheduler.steps, unexpected_messages=scheduler.unexpected_messages, model=type(model).__name__
        )
