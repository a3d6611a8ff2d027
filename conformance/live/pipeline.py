"""Start the engine's process topology, push a workload through it, stop it cleanly.

::

    client (this process) --TokenizedGenerateReqInput, TokenizedEmbeddingReqInput,
       |  ^                 AbortReq, FlushCacheReqInput-->  scheduler (process)
       |  |                                                     |      |
       |  +------FlushCacheReqOutput---------------------------+      | BatchTokenIDOutput,
       |                                                               | BatchEmbeddingOutput
       +<--BatchStrOutput, BatchEmbeddingOutput--  detokenizer (process) <+

Every arrow is a ZeroMQ PUSH/PULL pair over ``ipc://`` in a fresh temporary
directory, and every message on it is encoded with the codec under test
(each process loads it from the same spec string). The child processes are
started with ``multiprocessing``'s ``spawn`` context.

Nothing hangs: starting, running and stopping each have a deadline, a child
that dies is noticed within one poll, and every failure is a
:class:`PipelineError` that says which process failed and how (its
traceback, or which requests never got an answer).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import queue
import shutil
import sys
import tempfile
import time
import types
from typing import Any, Dict, List, Optional, Union

import zmq

from conformance.plugin import load_codec

from . import detokenizer, scheduler
from .client import ClientRun, drive, mean_inter_token_latency
from .process import SEND_TIMEOUT_MS, HopConfig
from .workload import WorkItem, generate_workload

__all__ = ["PipelineError", "PipelineResult", "run_pipeline", "default_device"]

_STOP_TIMEOUT_S = 15.0


class PipelineError(RuntimeError):
    """The pipeline could not start, a process failed, or requests went unanswered in time."""


@dataclasses.dataclass
class PipelineResult:
    """One run of a workload through the pipeline with one codec.

    Attributes
    ----------
    codec, codec_spec
        The codec's declared name (as in every mismatch report) and the spec it was loaded from.
    outputs
        Request id -> every answer received for it, in arrival order, each a
        one-row message (``BatchStrOutput``, ``BatchEmbeddingOutput``) or a
        ``FlushCacheReqOutput``. Junk items have no entry.
    hop_stats
        Process name -> counters: ``decode_errors`` (bad frames the codec
        refused), ``decode_crashes`` (frames that made it raise something
        else), ``received``, ``sent``, ``first_errors``, ``send_cpu_s`` and
        ``recv_cpu_s`` (CPU seconds of its thread in ``transport.send`` and
        ``transport.recv``: codec and socket)
        and ``cpu_s`` (its CPU seconds from ready to stop).
    requests_per_s, tokens_per_s
        Answered requests and generated tokens per second of wall time,
        from the first send to the last answer (process start-up excluded).
    mean_itl_s
        Mean time between consecutive token-carrying chunks of streamed
        requests, as the client sees them; ``None`` without streamed tokens.
    """

    codec: str
    device: str
    concurrency: int
    codec_spec: str
    outputs: Dict[str, List[Any]]
    hop_stats: Dict[str, Dict[str, Any]]
    requests: int
    output_tokens: int
    wall_s: float
    requests_per_s: float
    tokens_per_s: float
    mean_itl_s: Optional[float]

    def summary(self) -> Dict[str, Any]:
        """The figures, JSON-ready (no outputs)."""
        return {
            "codec": self.codec,
            "codec_spec": self.codec_spec,
            "device": self.device,
            "concurrency": self.concurrency,
            "requests": self.requests,
            "output_tokens": self.output_tokens,
            "wall_s": round(self.wall_s, 6),
            "requests_per_s": round(self.requests_per_s, 3),
            "tokens_per_s": round(self.tokens_per_s, 3),
            "mean_itl_ms": None if self.mean_itl_s is None else round(self.mean_itl_s * 1e3, 4),
            "decode_errors": {name: st.get("decode_errors", 0) for name, st in sorted(self.hop_stats.items())},
            "decode_crashes": {name: st.get("decode_crashes", 0) for name, st in sorted(self.hop_stats.items())},
            "ipc_cpu_s": {name: round(_ipc_cpu_s(st), 6) for name, st in sorted(self.hop_stats.items())},
            "cpu_s": {name: round(st.get("cpu_s", 0.0), 6) for name, st in sorted(self.hop_stats.items())},
        }

    @property
    def ipc_cpu_s(self) -> float:
        """CPU seconds every process spent in send and receive (codec and socket), summed."""
        return sum(_ipc_cpu_s(st) for st in self.hop_stats.values())

    @property
    def cpu_s(self) -> float:
        """CPU seconds of every process from ready to stop, summed."""
        return sum(st.get("cpu_s", 0.0) for st in self.hop_stats.values())

    def line(self) -> str:
        """One human-readable line of the figures."""
        itl = "n/a" if self.mean_itl_s is None else f"{self.mean_itl_s * 1e3:.2f} ms"
        errors = ", ".join(f"{n} {st.get('decode_errors', 0)}" for n, st in sorted(self.hop_stats.items()))
        return (
            f"{self.codec:>12} on {self.device}, concurrency {self.concurrency}: {self.requests} requests, "
            f"{self.output_tokens} tokens in {self.wall_s:.3f} s = {self.requests_per_s:.1f} req/s, "
            f"{self.tokens_per_s:.1f} tok/s, mean ITL {itl}; CPU in IPC {self.ipc_cpu_s:.3f} s of {self.cpu_s:.3f} s; "
            f"bad frames counted: {errors}"
        )


def _ipc_cpu_s(stats: Dict[str, Any]) -> float:
    return stats.get("send_cpu_s", 0.0) + stats.get("recv_cpu_s", 0.0)


def default_device() -> str:
    """``"cuda"`` when torch sees a GPU, else ``"cpu"``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def run_pipeline(
    codec: str,
    workload: Union[int, List[WorkItem]],
    *,
    device: Optional[str] = None,
    concurrency: int = 8,
    model_seed: int = 0,
    ipc_bound: bool = False,
    timeout_s: Optional[float] = None,
    idle_timeout_s: float = 30.0,
    start_timeout_s: float = 120.0,
) -> PipelineResult:
    """Run ``workload`` through a fresh scheduler and detokenizer speaking ``codec``; return what came back.

    Parameters
    ----------
    codec
        A spec for :func:`conformance.plugin.load_codec` (``"pickle"``,
        ``"reference"``, ``"MODULE:ATTR"``); every process loads its own.
    workload
        From :func:`conformance.live.workload.generate_workload` (or built by
        hand); an int ``n`` means ``generate_workload(n, seed=0)``.
    device
        Where the scheduler runs the model (``"cpu"``, ``"cuda"``, ``"cuda:1"``); default :func:`default_device`.
    concurrency
        Most requests in flight at once (>= 1).
    ipc_bound
        The scheduler reads its outputs from :class:`~conformance.live.precomputed.PrecomputedLM`
        tables instead of running the model, so that the run's time is IPC.
    timeout_s
        Deadline for every answer once the processes are up; default ``60 + 0.5 * len(workload)``.
    idle_timeout_s
        Fail as soon as no answer at all has come for this long while some are due
        (a message a codec dropped is never answered).

    Raises
    ------
    PipelineError
        A process failed to start or died (its traceback is in the message),
        or answers were still missing at the deadline.
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if isinstance(workload, int):
        workload = generate_workload(workload, seed=0)
    device = device or default_device()
    timeout_s = 60.0 + 0.5 * len(workload) if timeout_s is None else timeout_s
    client_codec = load_codec(codec)  # fails here, early, for a bad spec
    tmp = tempfile.mkdtemp(prefix="ipc-live-")
    config = HopConfig(
        codec=codec,
        device=device,
        model_seed=model_seed,
        scheduler_addr=f"ipc://{tmp}/scheduler",
        detokenizer_addr=f"ipc://{tmp}/detokenizer",
        client_addr=f"ipc://{tmp}/client",
        ipc_bound=ipc_bound,
    )
    mp = multiprocessing.get_context("spawn")
    stop, reports = mp.Event(), mp.Queue()
    procs = {
        "scheduler": mp.Process(target=scheduler.serve, args=(config, stop, reports), name="live-scheduler", daemon=True),
        "detokenizer": mp.Process(target=detokenizer.serve, args=(config, stop, reports), name="live-detokenizer", daemon=True),
    }
    context = zmq.Context()
    inbox = context.socket(zmq.PULL)
    to_scheduler = context.socket(zmq.PUSH)
    to_scheduler.setsockopt(zmq.SNDTIMEO, SEND_TIMEOUT_MS)
    collected: Dict[str, Any] = {}
    try:
        inbox.bind(config.client_addr)
        to_scheduler.connect(config.scheduler_addr)
        with _main_module_hidden():
            for proc in procs.values():
                proc.start()
        _await(reports, procs, collected, "ready", time.monotonic() + start_timeout_s)
        try:
            run = drive(
                workload,
                client_codec,
                to_scheduler,
                inbox,
                concurrency=concurrency,
                deadline=time.monotonic() + timeout_s,
                check=lambda: _check_alive(reports, procs, collected),
                idle_timeout_s=idle_timeout_s,
            )
        except TimeoutError as exc:
            counters: Union[Dict[str, Any], str]
            try:
                counters = _stop(stop, reports, procs, collected)
            except PipelineError as stop_failure:
                counters = f"unavailable ({stop_failure})"
            raise PipelineError(f"live pipeline ({codec}, {device}) timed out: {exc}; process counters: {counters}") from None
        except PipelineError:
            raise
        except Exception as exc:  # the client's own codec failed (an encode error, say)
            raise PipelineError(f"the client failed with {codec}: {type(exc).__name__}: {exc}") from exc
        stats = _stop(stop, reports, procs, collected)
    finally:
        stop.set()
        for proc in procs.values():
            if proc.pid is None:  # never started
                continue
            if proc.is_alive():
                proc.terminate()
            proc.join(5)
        inbox.close(linger=0)
        to_scheduler.close(linger=0)
        context.term()
        shutil.rmtree(tmp, ignore_errors=True)
    return _result(client_codec.name, codec, device, concurrency, workload, run, stats)


def _result(
    name: str, spec: str, device: str, concurrency: int, workload: List[WorkItem], run: ClientRun, stats: Dict[str, Any]
) -> PipelineResult:
    stats = dict(stats)
    stats["client"] = dict(run.stats, unexpected_answers=len(run.unexpected))
    tokens = 0
    for answers in run.outputs.values():
        if answers and getattr(answers[-1], "completion_tokens", None):
            tokens += answers[-1].completion_tokens[0]
    wall = max(run.ended - run.started, 1e-9)
    answered = len(run.outputs)
    return PipelineResult(
        codec=name,
        device=device,
        concurrency=concurrency,
        codec_spec=spec,
        outputs=run.outputs,
        hop_stats=stats,
        requests=answered,
        output_tokens=tokens,
        wall_s=wall,
        requests_per_s=answered / wall,
        tokens_per_s=tokens / wall,
        mean_itl_s=mean_inter_token_latency(run, workload),
    )


@contextlib.contextmanager
def _main_module_hidden():
    """Start children without ``spawn`` re-running the caller's ``__main__``.

    ``spawn`` imports the parent's main script in every child, which fails for
    ``python - <script`` and reruns unguarded scripts; the children need
    nothing from it (their targets and arguments live in this package).
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _take(reports: Any, collected: Dict[str, Any], timeout: float) -> bool:
    try:
        kind, name, payload = reports.get(timeout=timeout)
    except queue.Empty:
        return False
    if kind == "error":
        raise PipelineError(f"the {name} process failed:\n{payload}")
    collected.setdefault(kind, {})[name] = payload
    return True


def _check_alive(reports: Any, procs: Dict[str, Any], collected: Dict[str, Any]) -> None:
    while _take(reports, collected, 0):
        pass
    for name, proc in procs.items():
        if not proc.is_alive():
            while _take(reports, collected, 0.5):  # its error report may still be in flight
                pass
            raise PipelineError(f"the {name} process exited unexpectedly (exit code {proc.exitcode})")


def _await(reports: Any, procs: Dict[str, Any], collected: Dict[str, Any], kind: str, deadline: float) -> Dict[str, Any]:
    while len(collected.get(kind, {})) < len(procs):
        if time.monotonic() > deadline:
            missing = sorted(set(procs) - set(collected.get(kind, {})))
            raise PipelineError(f"no {kind!r} report from {', '.join(missing)} in time")
        if not _take(reports, collected, 0.2):
            for name, proc in procs.items():
                if not proc.is_alive() and name not in collected.get(kind, {}):
                    while _take(reports, collected, 0.5):
                        pass
                    raise PipelineError(f"the {name} process exited (code {proc.exitcode}) before its {kind!r} report")
    return collected[kind]


def _stop(stop: Any, reports: Any, procs: Dict[str, Any], collected: Dict[str, Any]) -> Dict[str, Any]:
    stop.set()
    stats = _await(reports, procs, collected, "stats", time.monotonic() + _STOP_TIMEOUT_S)
    for proc in procs.values():
        proc.join(_STOP_TIMEOUT_S)
    return dict(stats)

