"""The client (tokenizer-manager side): sends the workload, collects every answer per request.

Keeps at most ``concurrency`` requests in flight: the first ``concurrency``
items go out at once, and each finished answer lets the next item go.
Answers arrive as batches; each is split into single-row messages of the
same class (:func:`split_rows`), so what is recorded for a request does not
depend on which other requests shared its batch.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import msgspec
import zmq

from reference_codec import schema as s

from .process import POLL_MS, new_stats, receive_all, send_counted
from .workload import WorkItem

__all__ = ["split_rows", "ClientRun", "drive"]


def split_rows(batch: Any) -> List[Tuple[str, Any]]:
    """``[(rid, one-row message)]`` for a batch message; ``[(rid, msg)]`` for a single one.

    Every list-valued field of a ``BaseBatchReq`` holds one entry per
    request; a one-row message keeps entry ``i`` of each (``[v[i]]``) and
    every other field as it is.
    """
    if not isinstance(batch, s.BaseBatchReq):
        return [(getattr(batch, "rid", None) or "", batch)]
    rows = []
    for i, rid in enumerate(batch.rids or []):
        changes = {}
        for name in batch.__struct_fields__:
            value = getattr(batch, name)
            if isinstance(value, list):
                changes[name] = [value[i]]
        rows.append((rid, msgspec.structs.replace(batch, **changes)))
    return rows


def _finished(msg: Any) -> bool:
    if isinstance(msg, (s.BatchStrOutput, s.BatchEmbeddingOutput)):
        return msg.finished_reasons[0] is not None
    return True


def _new_tokens(msg: Any) -> int:
    if isinstance(msg, s.BatchStrOutput) and msg.output_ids is not None:
        return len(msg.output_ids[0])
    return 0


class ClientRun:
    """What the client saw: answers and their arrival times per request id."""

    def __init__(self) -> None:
        self.outputs: Dict[str, List[Any]] = {}
        self.arrivals: Dict[str, List[Tuple[float, int]]] = {}  # (time, new tokens)
        self.sent_at: Dict[str, float] = {}
        self.stats: Dict[str, Any] = new_stats()
        self.unexpected: List[str] = []
        self.started = self.ended = 0.0


def drive(
    workload: List[WorkItem],
    codec: Any,
    to_scheduler: zmq.Socket,
    inbox: zmq.Socket,
    *,
    concurrency: int,
    deadline: float,
    check: Callable[[], None],
    idle_timeout_s: float = 30.0,
) -> ClientRun:
    """Send ``workload`` and wait for every answer; ``check()`` runs between polls (it raises when a process died).

    Raises ``TimeoutError`` naming the requests still unanswered at ``deadline``
    (``time.monotonic()``), or as soon as nothing at all has arrived for
    ``idle_timeout_s`` seconds while answers are due (a dropped message
    never gets one, so waiting longer would only delay the failure).
    """
    run = ClientRun()
    pending = list(workload)
    waiting: Dict[str, WorkItem] = {}
    run.started = time.perf_counter()
    cpu_at_start = time.process_time()

    def send_next() -> None:
        while pending and len(waiting) < concurrency:
            item = pending.pop(0)
            run.sent_at[item.rid] = time.perf_counter()
            if item.kind == "junk":
                for frames in item.messages:
                    to_scheduler.send_multipart(frames)
                continue
            waiting[item.rid] = item
            run.outputs[item.rid] = []
            run.arrivals[item.rid] = []
            for msg in item.messages:
                send_counted(to_scheduler, msg, codec, run.stats)

    send_next()
    last_arrival = time.monotonic()
    while waiting:
        now = time.monotonic()
        if now > deadline or now - last_arrival > idle_timeout_s:
            stuck = ", ".join(sorted(waiting, key=_order)[:10])
            why = "at the deadline" if now > deadline else f"after {idle_timeout_s:g} s without any answer"
            raise TimeoutError(f"{len(waiting)} request(s) still unanswered {why}: {stuck}")
        check()
        if not inbox.poll(POLL_MS):
            continue
        last_arrival = time.monotonic()
        times: List[float] = []
        for batch, now in zip(receive_all(inbox, codec, run.stats, times), times):
            for rid, msg in split_rows(batch):
                if rid not in waiting:
                    run.unexpected.append(f"{type(msg).__name__} for {rid!r}")
                    continue
                run.outputs[rid].append(msg)
                run.arrivals[rid].append((now, _new_tokens(msg)))
                if _finished(msg):
                    del waiting[rid]
        send_next()
    run.ended = time.perf_counter()
    run.stats["cpu_s"] = time.process_time() - cpu_at_start
    return run


def _order(rid: str) -> int:
    tail = rid.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def mean_inter_token_latency(run: ClientRun, workload: List[WorkItem]) -> Optional[float]:
    """Mean seconds between consecutive token-carrying chunks of streamed requests (``None`` if none)."""
    gaps: List[float] = []
    for item in workload:
        if not item.stream:
            continue
        times = [t for t, n in run.arrivals.get(item.rid, []) if n > 0]
        gaps.extend(b - a for a, b in zip(times, times[1:]))
    return sum(gaps) / len(gaps) if gaps else None
