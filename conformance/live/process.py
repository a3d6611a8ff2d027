"""What every pipeline process shares: its codec, its sockets, its counters and its reports.

A :class:`Hop` is used as a context manager in each process's ``serve``
function. It builds the codec from its spec string (each process loads its
own, as separate engine processes do), opens ZeroMQ sockets, receives and
sends through :mod:`reference_codec.transport`, and reports to the parent
on a ``multiprocessing`` queue: ``("ready", name, None)`` once its sockets
are up, then ``("stats", name, counters)`` when it stops, or ``("error",
name, traceback)`` if it fails.

Every process also counts the CPU time of its own thread spent in
``transport.send`` and ``transport.recv`` (codec and socket: ``send_cpu_s``,
``recv_cpu_s``)
and, at the end, its whole CPU time from ``ready`` on (``cpu_s``). CPU time,
not wall time: on a machine with fewer cores than processes, a process waiting
for a core would count its wait as IPC.

Bad input never kills a process: a frame the codec refuses with its
declared decode error is counted in ``decode_errors``, one that makes the
codec raise anything else in ``decode_crashes``, and the first few messages
are kept in ``first_errors``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import traceback
from typing import Any, Dict, List, Literal, Optional

import zmq

from conformance.interrupts import stop_with_parent
from reference_codec import transport

__all__ = ["HopConfig", "Hop", "POLL_MS", "SEND_TIMEOUT_MS", "new_stats", "send_counted", "receive_all"]

#: How long an idle process blocks on its inbox before looking at the stop flag again.
POLL_MS = 50
#: A send that cannot complete in this time (the peer is gone) fails the process loudly.
SEND_TIMEOUT_MS = 30_000
_MAX_DRAIN = 1024
_KEPT_ERRORS = 3


@dataclasses.dataclass(frozen=True)
class HopConfig:
    """What a pipeline process needs; plain strings and ints, so it pickles across ``spawn``."""

    codec: str
    device: str
    model_seed: int
    scheduler_addr: str
    detokenizer_addr: str
    client_addr: str
    #: the scheduler reads its outputs from tables instead of running the model (``--ipc-bound``)
    ipc_bound: bool = False


class Hop:
    def __init__(self, name: str, config: HopConfig, stop: Any, reports: Any):
        self.name = name
        self.config = config
        self._stop = stop
        self._reports = reports
        self.stats = new_stats()
        self._sockets: List[zmq.Socket] = []
        self._cpu_at_ready: Optional[float] = None

    def __enter__(self) -> "Hop":
        stop_with_parent()  # a driver killed by SIGKILL cannot set the stop flag
        self._context = zmq.Context()
        try:
            import torch

            from conformance.plugin import load_codec

            # One thread per process: the pipeline's processes share the machine's cores.
            torch.set_num_threads(1)
            self.codec = load_codec(self.config.codec)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if exc_type is None:
            if self._cpu_at_ready is not None:
                self.stats["cpu_s"] = time.process_time() - self._cpu_at_ready
            self._reports.put(("stats", self.name, self.stats))
        else:
            self._reports.put(("error", self.name, "".join(traceback.format_exception(exc_type, exc, tb))))
        for sock in self._sockets:
            sock.close(linger=0)
        self._context.term()
        return False

    def bind(self, addr: str) -> zmq.Socket:
        sock = self._context.socket(zmq.PULL)
        sock.bind(addr)
        self._sockets.append(sock)
        return sock

    def connect(self, addr: str) -> zmq.Socket:
        sock = self._context.socket(zmq.PUSH)
        sock.setsockopt(zmq.SNDTIMEO, SEND_TIMEOUT_MS)
        sock.connect(addr)
        self._sockets.append(sock)
        return sock

    def ready(self) -> None:
        self._cpu_at_ready = time.process_time()
        self._reports.put(("ready", self.name, None))

    def stopping(self) -> bool:
        return self._stop.is_set()

    def receive(self, sock: zmq.Socket, *, block: bool) -> List[Any]:
        """Every message waiting now (waiting up to :data:`POLL_MS` for one if ``block``), decoded."""
        if not sock.poll(POLL_MS if block else 0):
            return []
        return receive_all(sock, self.codec, self.stats)

    def send(self, sock: zmq.Socket, msg: Any) -> None:
        send_counted(sock, msg, self.codec, self.stats)


def new_stats() -> Dict[str, Any]:
    """A process's counters, all zero."""
    return {"decode_errors": 0, "decode_crashes": 0, "received": 0, "sent": 0, "send_cpu_s": 0.0, "recv_cpu_s": 0.0, "first_errors": []}


def send_counted(sock: zmq.Socket, msg: Any, codec: Any, stats: Dict[str, Any]) -> None:
    """``transport.send``, counted in ``stats`` (``sent``, and its thread CPU time in ``send_cpu_s``)."""
    start = time.thread_time()
    transport.send(sock, msg, codec)
    stats["send_cpu_s"] += time.thread_time() - start
    stats["sent"] += 1


def receive_all(sock: zmq.Socket, codec: Any, stats: Dict[str, Any], times: Optional[List[float]] = None) -> List[Any]:
    """Drain ``sock`` without blocking; decode failures are counted in ``stats``, not raised.

    With ``times``, the ``time.perf_counter()`` at which each returned message was received is appended to it.
    """
    out = []
    for _ in range(_MAX_DRAIN):
        start = time.thread_time()
        try:
            msg = transport.recv(sock, codec, flags=zmq.NOBLOCK)
        except zmq.Again:
            break
        except codec.caps.decode_error as exc:
            _count(stats, "decode_errors", exc)
            continue
        except Exception as exc:  # a codec that raises something other than its declared error
            _count(stats, "decode_crashes", exc)
            continue
        finally:  # every attempt, the empty one included: a poll that finds nothing costs too
            stats["recv_cpu_s"] += time.thread_time() - start
        stats["received"] += 1
        out.append(msg)
        if times is not None:
            times.append(time.perf_counter())
    return out


def _count(stats: Dict[str, Any], key: str, exc: BaseException) -> None:
    stats[key] += 1
    if len(stats["first_errors"]) < _KEPT_ERRORS:
        stats["first_errors"].append(f"{key}: {type(exc).__name__}: {exc}"[:300])
