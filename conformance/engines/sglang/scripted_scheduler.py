"""A scripted scheduler process for SGLang 0.5.23's real front end: deterministic answers, no model, SGLang's own IPC.

:func:`run_scripted_scheduler` has the signature of SGLang's
``run_scheduler_process`` and is passed to
``sglang.srt.entrypoints.http_server.launch_server(server_args,
run_scheduler_process_func=...)``. SGLang's HTTP server, TokenizerManager and
DetokenizerManager then run unchanged; only the GPU work is replaced.

IPC, exactly as SGLang's scheduler does it
    SGLang's plugins are loaded (``load_plugins``: the reference codec's hook,
    :mod:`conformance.engines.sglang.reference_ipc`, installs itself there when
    asked), the process is published and configured with SGLang's own
    functions, sockets come from ``SchedulerIpcChannels.create``, requests are
    read with ``io_struct.sock_recv`` and answers sent with
    ``SenderWrapper.send_output``. So every hop uses the codec the
    environment selects (``SGLANG_USE_PICKLE_IPC``). The handshake is the dict
    ``Scheduler.get_init_info`` sends (``status``, ``max_total_num_tokens``,
    ``max_req_input_len``, ``startup_time``, ``hicache_object_layout``).

Generation (``TokenizedGenerateReqInput``), a pure function of the request
    Every loop iteration is one decode step: each running request gains one
    token. Token ``k`` (0-based) of a request is ``WHOLE[(seed + 7 * k) %
    len(WHOLE)]``, where ``seed`` is the CRC32 of the input ids and ``WHOLE``
    the ids, in order, that decode on their own to text without U+FFFD
    (special tokens excluded). Tokens that are part of a UTF-8 character are
    never drawn because SGLang's OpenAI streaming drops the logprobs of a
    chunk whose text is still incomplete, so which logprobs a client gets
    would depend on how chunks fell (timing), not on the IPC. A request finishes

    * ``stop`` (``matched``: the EOS id) after its natural length of
      ``1 + seed % 24`` tokens, the last one being the EOS id, unless
      ``ignore_eos``;
    * ``stop`` (``matched``: the id) when a token is in ``stop_token_ids``;
    * ``length`` at ``max_new_tokens``;
    * ``abort`` when an ``AbortReq`` names it (or ``abort_all``).

    A request asking for :data:`HOLD_FROM` new tokens or more stops after
    :data:`HOLD_AT` tokens and waits, unfinished, until it is aborted: that
    makes an abort deterministic (the client has seen exactly ``HOLD_AT``
    tokens when it aborts). Stop strings are not scripted.

    Logprobs: token ``t`` at step ``k`` has logprob ``-((t * 7 + k) % 1000) / 250``;
    its top-``n`` are ids ``(t + 13 * j) % VOCAB`` with logprobs
    ``-j / 4 - ((t + k) % 10) / 100`` for ``j < n``; a requested token id ``i``
    has ``-((i * 11 + k) % 1000) / 200``. Input logprobs start at
    ``logprob_start_len`` (``-1``: only the last input token), the first
    position's value and top-k being ``None`` as in SGLang; the others follow
    the same formulas with ``k = -1 - position``.

    Outputs are batched like SGLang's streamer: a streaming request is in
    every step's ``BatchTokenIDOutput``, a non-streaming one only when it
    finishes; ``time_stats`` is left out (SGLang's scheduler pickles its
    per-request timings there: timestamps, which no answer compares);
    incremental-detokenization offsets (``decode_ids``,
    ``read_offsets``) start at the whole prompt, as ``Req.init_incremental_detokenize`` does.

Control requests
    ``FreezeGCReq`` is forwarded to the detokenizer (as SGLang does);
    ``GetInternalStateReq`` answers SGLang's resolved server args plus
    ``{"scripted": {"requests", "finished", "aborted", "held"}}`` (the counts
    since start); ``FlushCacheReqInput`` answers ``success=True`` when nothing
    runs and ``False`` otherwise; ``ShutdownReq`` ends the loop. Other
    requests are logged and dropped.
"""

from __future__ import annotations

import logging
import time
import zlib
from array import array
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["run_scripted_scheduler", "HOLD_AT", "HOLD_FROM", "MAX_TOTAL_TOKENS", "token_at", "whole_tokens"]

logger = logging.getLogger(__name__)

#: Tokens a held request produces before it waits for its abort.
HOLD_AT = 4
#: ``max_new_tokens`` from which a request is held (within the model folder's 4096-token context, with the prompt).
HOLD_FROM = 4000
#: The token budget the handshake reports (there is no KV cache to size).
MAX_TOTAL_TOKENS = 1 << 20
_POLL_MS = 20
_SPECIAL = 3


def token_at(seed: int, step: int, whole: Sequence[int]) -> int:
    """Token ``step`` of a request whose input ids hash to ``seed``; ``whole``: the ids it may draw."""
    return whole[(seed + 7 * step) % len(whole)]


def whole_tokens(tokenizer: Any) -> List[int]:
    """The ids, in order, that decode alone to text without U+FFFD, special tokens excluded."""
    return [i for i in range(_SPECIAL, len(tokenizer)) if "\ufffd" not in tokenizer.decode([i])]


def _token_logprob(token: int, step: int) -> float:
    return -((token * 7 + step) % 1000) / 250


def _top(token: int, step: int, n: int, vocab: int):
    return [-j / 4 - ((token + step) % 10) / 100 for j in range(n)], [(token + 13 * j) % vocab for j in range(n)]


def _ids_logprobs(ids: List[int], step: int) -> List[float]:
    return [-((i * 11 + step) % 1000) / 200 for i in ids]


class _Running:
    """One request in flight: what the scheduler has produced and sent so far."""

    def __init__(self, req: Any, vocab: int, eos: int, whole: Sequence[int]):
        self.req = req
        self.whole = whole
        self.input_ids: List[int] = list(req.input_ids or ())
        self.seed = zlib.crc32(array("q", self.input_ids).tobytes())
        sp = req.sampling_params
        self.max_new = sp.max_new_tokens if sp.max_new_tokens is not None else 128
        self.ignore_eos = bool(sp.ignore_eos)
        self.stop_ids = set(sp.stop_token_ids or ())
        self.natural = 1 + self.seed % 24
        self.held = self.max_new >= HOLD_FROM
        self.vocab = vocab
        self.eos = eos
        self.output: List[int] = []
        self.sent = 0
        self.finish: Optional[Dict[str, Any]] = None
        self.input_logprobs_sent = False
        self.decode_ids: List[int] = list(self.input_ids)
        self.read_offset = len(self.input_ids)
        self.decode_sent = 0

    def step(self) -> None:
        if self.finish is not None or (self.held and len(self.output) >= HOLD_AT):
            return
        k = len(self.output)
        token = self.eos if (k + 1 == self.natural and not self.ignore_eos) else token_at(self.seed, k, self.whole)
        self.output.append(token)
        self.decode_ids.append(token)
        if token == self.eos and not self.ignore_eos:
            self.finish = {"type": "stop", "matched": token}
        elif token in self.stop_ids:
            self.finish = {"type": "stop", "matched": token}
        elif len(self.output) >= self.max_new:
            self.finish = {"type": "length", "length": self.max_new}

    def abort(self, message: Optional[str]) -> None:
        if self.finish is None:
            self.finish = {"type": "abort", "message": message or "Aborted", "status_code": None, "err_type": None}


class _Batch:
    """The lists of one ``BatchTokenIDOutput``, appended per request as SGLang's ``OutputStreamer`` does."""

    def __init__(self) -> None:
        self.rows: List[_Running] = []

    def add(self, r: _Running) -> None:
        self.rows.append(r)

    def payload(self, io: Any) -> Any:
        rows = self.rows
        logprob = any(r.req.return_logprob for r in rows)
        fields: Dict[str, List[Any]] = {
            name: []
            for name in (
                "input_token_logprobs_val", "input_token_logprobs_idx", "output_token_logprobs_val", "output_token_logprobs_idx",
                "input_top_logprobs_val", "input_top_logprobs_idx", "output_top_logprobs_val", "output_top_logprobs_idx",
                "input_token_ids_logprobs_val", "input_token_ids_logprobs_idx", "output_token_ids_logprobs_val", "output_token_ids_logprobs_idx",
            )
        }
        decode_ids, read_offsets, output_ids = [], [], []
        for r in rows:
            new = r.output[r.sent:]
            output_ids.append(array("q", new))
            decode_ids.append(array("q", r.decode_ids[r.decode_sent:]))
            read_offsets.append(r.read_offset)
            if logprob:
                self._logprobs(r, fields)
            r.sent = len(r.output)
            r.decode_sent = len(r.decode_ids)
        return io.BatchTokenIDOutput(
            rids=[r.req.rid for r in rows],
            http_worker_ipcs=[r.req.http_worker_ipc for r in rows],
            finished_reasons=[r.finish for r in rows],
            decoded_texts=["" for _ in rows],
            decode_ids=decode_ids,
            read_offsets=read_offsets,
            output_ids=output_ids,
            skip_special_tokens=[r.req.sampling_params.skip_special_tokens for r in rows],
            spaces_between_special_tokens=[r.req.sampling_params.spaces_between_special_tokens for r in rows],
            no_stop_trim=[r.req.sampling_params.no_stop_trim for r in rows],
            prompt_tokens=[len(r.input_ids) for r in rows],
            reasoning_tokens=[0 for _ in rows],
            completion_tokens=[len(r.output) for r in rows],
            cached_tokens=[0 for _ in rows],
            output_token_entropy_val=None,
            output_token_sampling_mask=None,
            output_hidden_states=None,
            routed_experts=None,
            indexer_topk=None,
            placeholder_tokens_idx=None,
            placeholder_tokens_val=None,
            retraction_counts=[0 for _ in rows],
            dp_ranks=[0 for _ in rows],
            image_tokens=[0 for _ in rows],
            audio_tokens=[0 for _ in rows],
            video_tokens=[0 for _ in rows],
            **{name: (values if logprob else None) for name, values in fields.items()},
        )

    @staticmethod
    def _logprobs(r: _Running, f: Dict[str, List[Any]]) -> None:
        req = r.req
        if not req.return_logprob:
            for name in f:
                f[name].append([])
            return
        n = req.top_logprobs_num or 0
        ids = list(req.token_ids_logprob or ())
        if not r.input_logprobs_sent:
            start = req.logprob_start_len if req.logprob_start_len >= 0 else len(r.input_ids) - 1
            positions = list(range(max(start, 0), len(r.input_ids)))
            vals: List[Optional[float]] = []
            tops_v: List[Optional[List[float]]] = []
            tops_i: List[Optional[List[int]]] = []
            ids_v: List[Optional[List[float]]] = []
            ids_i: List[Optional[List[int]]] = []
            for p in positions:
                t, k = r.input_ids[p], -1 - p
                first = p == 0
                vals.append(None if first else _token_logprob(t, k))
                tv, ti = _top(t, k, n, r.vocab)
                tops_v.append(None if first or not n else tv)
                tops_i.append(None if first or not n else ti)
                ids_v.append(None if first or not ids else _ids_logprobs(ids, k))
                ids_i.append(None if first or not ids else ids)
            f["input_token_logprobs_val"].append(vals)
            f["input_token_logprobs_idx"].append([r.input_ids[p] for p in positions])
            f["input_top_logprobs_val"].append(tops_v if n else [])
            f["input_top_logprobs_idx"].append(tops_i if n else [])
            f["input_token_ids_logprobs_val"].append(ids_v if ids else [])
            f["input_token_ids_logprobs_idx"].append(ids_i if ids else [])
            r.input_logprobs_sent = True
        else:
            for name in ("input_token_logprobs_val", "input_token_logprobs_idx", "input_top_logprobs_val", "input_top_logprobs_idx",
                         "input_token_ids_logprobs_val", "input_token_ids_logprobs_idx"):
                f[name].append([])
        steps = range(r.sent, len(r.output))
        f["output_token_logprobs_val"].append([_token_logprob(r.output[k], k) for k in steps])
        f["output_token_logprobs_idx"].append([r.output[k] for k in steps])
        tops = [_top(r.output[k], k, n, r.vocab) for k in steps]
        f["output_top_logprobs_val"].append([v for v, _ in tops] if n else [])
        f["output_top_logprobs_idx"].append([i for _, i in tops] if n else [])
        f["output_token_ids_logprobs_val"].append([_ids_logprobs(ids, k) for k in steps] if ids else [])
        f["output_token_ids_logprobs_idx"].append([ids for _ in steps] if ids else [])


class _Scheduler:
    def __init__(self, channels: Any, io: Any, server_args: Any, vocab: int, eos: int, whole: Sequence[int]):
        self.whole = whole
        self.channels = channels
        self.io = io
        self.server_args = server_args
        self.vocab = vocab
        self.eos = eos
        self.running: Dict[str, _Running] = {}
        self.counts = {"requests": 0, "finished": 0, "aborted": 0, "held": 0}
        self.exiting = False

    def loop(self) -> None:
        import zmq

        sock = self.channels.recv_from_tokenizer
        while not self.exiting:
            if not self.running and not sock.poll(_POLL_MS):
                continue
            while True:
                try:
                    req = self.io.sock_recv(sock, zmq.NOBLOCK)
                except zmq.Again:
                    break
                self.handle(req)
                if self.exiting:
                    return
            self.step()

    def handle(self, req: Any) -> None:
        io = self.io
        send_tokenizer = self.channels.send_to_tokenizer.send_output
        if isinstance(req, io.TokenizedGenerateReqInput):
            self.counts["requests"] += 1
            self.running[req.rid] = _Running(req, self.vocab, self.eos, self.whole)
        elif isinstance(req, io.AbortReq):
            targets = list(self.running.values()) if req.abort_all else [r for rid, r in self.running.items() if rid == req.rid]
            for r in targets:
                r.abort(req.abort_message)
        elif isinstance(req, io.FreezeGCReq):
            self.channels.send_to_detokenizer.send_output(req, req)
        elif isinstance(req, io.GetInternalStateReq):
            from sglang.srt.runtime_context import get_context
            from sglang.srt.utils.msgspec_utils import msgspec_to_builtins

            state = dict(get_context().resolved_server_args_dict())
            state.pop("custom_sigquit_handler", None)
            state["scripted"] = dict(self.counts, held=sum(1 for r in self.running.values() if r.held and r.finish is None))
            send_tokenizer(io.GetInternalStateReqOutput(internal_state=msgspec_to_builtins(state)), req)
        elif isinstance(req, io.FlushCacheReqInput):
            send_tokenizer(io.FlushCacheReqOutput(success=not self.running), req)
        elif isinstance(req, io.ShutdownReq):
            self.exiting = True
        else:
            logger.warning("scripted scheduler: %s is not scripted; dropped", type(req).__name__)

    def step(self) -> None:
        if not self.running:
            return
        batch = _Batch()
        for rid, r in list(self.running.items()):
            r.step()
            if r.finish is not None:
                batch.add(r)
                del self.running[rid]
                self.counts["aborted" if r.finish["type"] == "abort" else "finished"] += 1
            elif r.req.stream and len(r.output) > r.sent:
                batch.add(r)
        if batch.rows:
            self.channels.send_to_detokenizer.send_output(batch.payload(self.io))


def run_scripted_scheduler(
    server_args: Any,
    port_args: Any,
    gpu_id: int,
    tp_rank: int,
    pp_rank: int,
    dp_rank: Optional[int],
    pipe_writer: Any,
    *args: Any,
    **kwargs: Any,
) -> None:
    """The scheduler process: SGLang's ``run_scheduler_process`` contract, the model replaced by the script above.

    It sends the handshake on ``pipe_writer`` once its sockets are open and
    serves until a ``ShutdownReq``; on an error it logs the traceback and
    sends SIGQUIT to its parent, as SGLang's scheduler does, so the server
    fails instead of waiting.
    """
    import os
    import signal

    import psutil
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.managers import io_struct as io
    from sglang.srt.managers.scheduler import configure_scheduler_process, resolve_spawn_dp_rank
    from sglang.srt.managers.scheduler_components.ipc_channels import SchedulerIpcChannels
    from sglang.srt.plugins import load_plugins
    from sglang.srt.runtime_context import SpawnRanks, publish, spawn_world_rank
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    load_plugins()
    dp_rank = resolve_spawn_dp_rank(dp_rank)
    publish(
        server_args,
        role="scheduler",
        ranks=SpawnRanks(world_rank=spawn_world_rank(server_args, tp_rank=tp_rank, pp_rank=pp_rank), dp_rank=dp_rank, gpu_id=gpu_id),
    )
    configure_scheduler_process(server_args, gpu_id)
    parent = psutil.Process().parent()
    channels = None
    try:
        started = time.time()
        tokenizer = get_tokenizer(resolving_view(server_args).tokenizer_path)
        channels = SchedulerIpcChannels.create(
            port_args=port_args,
            is_rank_zero=True,
            skip_tokenizer_init=server_args.skip_tokenizer_init,
            metrics_enabled=False,
            enable_scripted_runtime=False,
        )
        scheduler = _Scheduler(channels, io, server_args, len(tokenizer), tokenizer.eos_token_id, whole_tokens(tokenizer))
        pipe_writer.send(
            {
                "status": "ready",
                "max_total_num_tokens": MAX_TOTAL_TOKENS,
                "max_req_input_len": MAX_TOTAL_TOKENS - 1,
                "startup_time": {"scheduler_e2e": time.time() - started},
                "hicache_object_layout": None,
            }
        )
        scheduler.loop()
    except Exception:
        logger.exception("scripted scheduler failed")
        parent.send_signal(signal.SIGQUIT)
    finally:
        if channels is not None:
            for sock in (channels.recv_from_tokenizer, channels.recv_from_rpc):
                if sock is not None:
                    sock.close(linger=0)
        logger.info("scripted scheduler %d exits", os.getpid())
