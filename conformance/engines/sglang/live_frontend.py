"""SGLang 0.5.23's real front end for ``python -m conformance.live --frontend sglang``: the engine's ``live_frontend``.

:class:`SGLangFrontend` is what :mod:`conformance.live.frontend` drives
(``Engine.live_frontend`` returns it). It knows

* the IPC modes (:data:`MODES`) and the environment that selects each:
  ``pickle`` (``SGLANG_USE_PICKLE_IPC=1``, SGLang's default), ``msgpack``
  (``=0``: SGLang's own msgspec codec) and ``reference`` (``=0`` plus
  ``IPC_CONFORMANCE_SGLANG_IPC=reference``: the reference codec in every
  process, :mod:`.reference_ipc`);
* how to start SGLang's HTTP server with the scripted scheduler
  (:mod:`.live_server`, :mod:`.scripted_scheduler`) on the weightless model
  (:mod:`.live_model`), in a session of its own, and how to stop it so that
  no process of that session is left (:meth:`SGLangFrontend.serve`);
* the seeded workload (:meth:`SGLangFrontend.workload`): ``/generate`` with
  text, a batch of texts, input ids, logprobs (per token, top-k, chosen ids,
  input logprobs), streaming or not, stop reasons (EOS, ``stop_token_ids``,
  length); ``/v1/chat/completions`` and ``/v1/completions``, streaming or not,
  with logprobs; and aborts: a held request aborted through
  ``/abort_request``, and a streaming client that disconnects;
* what of an answer is compared (:meth:`SGLangFrontend.answer`): everything
  but request ids, timestamps and latencies; a stream is compared as the
  text, tokens and logprobs it adds up to (SGLang may merge stream chunks
  when the client reads late, so chunk boundaries are timing, not behaviour);
* the ``sglang.bench_serving`` command line for the benchmark.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

from conformance.live.frontend import FrontendRunError

from .live_model import SPECIAL_TOKENS
from .scripted_scheduler import HOLD_AT, HOLD_FROM

__all__ = ["MODES", "SGLangFrontend", "ServerStartError", "FRONTEND"]

#: IPC modes, each a set of environment variables for every SGLang process.
MODES: Mapping[str, Mapping[str, str]] = {
    "pickle": {"SGLANG_USE_PICKLE_IPC": "1"},
    "msgpack": {"SGLANG_USE_PICKLE_IPC": "0"},
    "reference": {"SGLANG_USE_PICKLE_IPC": "0", "IPC_CONFORMANCE_SGLANG_IPC": "reference"},
}
_VOLATILE = {"id", "created", "e2e_latency", "response_sent_to_client_ts", "system_fingerprint"}
_WORDS = "the quick brown fox jumps over lazy dog scheduler streams tokens request carries input ids sampling hello how are you".split()
_STARTUP_S = 180.0
_STOP_S = 20.0


class ServerStartError(FrontendRunError):
    """SGLang's server did not come up (it exited, or ``/health`` never answered); the message ends with its log's tail."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_processes(sid: int) -> List[int]:
    """Pids of the live processes in session ``sid`` (zombies excluded)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getsid(proc.info["pid"]) == sid:
                found.append(proc.info["pid"])
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def session_cpu_seconds(sid: int) -> float:
    """CPU seconds (user and system) used so far by the live processes of session ``sid``, and by the children they reaped."""
    import psutil

    total = 0.0
    for pid in session_processes(sid):
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def stop_session(proc: "subprocess.Popen[bytes]", timeout_s: float = _STOP_S) -> None:
    """SIGTERM the server (SGLang's own shutdown: ``ShutdownReq``, children killed), then SIGKILL whatever of its session is left."""
    sid = proc.pid  # the server is its session's leader (start_new_session)
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + timeout_s
    while True:
        left = session_processes(sid)
        if not left:
            break
        if time.monotonic() > deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout_s)


class SGLangFrontend:
    """SGLang's HTTP server, tokenizer and detokenizer with the scripted scheduler, per IPC mode."""

    name = "sglang"
    modes: Sequence[str] = tuple(MODES)
    #: how the benchmark's repeats may be spread: every mode's server up at once, runs alternating
    description = "SGLang 0.5.23 HTTP server + TokenizerManager + DetokenizerManager, scripted scheduler, weightless Qwen2 folder"

    def __init__(self) -> None:
        self._sessions: Dict[str, int] = {}  # base URL -> the session of its server's processes

    def server_cpu_seconds(self, url: str) -> float:
        """CPU seconds used so far by every process of the server at ``url`` (the HTTP server, detokenizer and scheduler); KeyError for a URL not served."""
        return session_cpu_seconds(self._sessions[url])

    @contextlib.contextmanager
    def serve(self, mode: str, workdir: str, *, log_name: Optional[str] = None, record: Optional[str] = None) -> Iterator[str]:
        """Start SGLang's server in ``mode``; yield its base URL; stop it and every process it started.

        The model folder and the server's log go under ``workdir``; with
        ``record`` (a folder), every process records the frames it sends
        there (:mod:`.frame_recorder`). Raises
        ``ValueError`` for an unknown mode and :class:`ServerStartError` when
        the server does not come up; the reference mode also fails to start
        unless all three processes log that the reference codec is installed.
        """
        if mode not in MODES:
            raise ValueError(f"unknown IPC mode {mode!r}: use one of {', '.join(MODES)}")
        from .live_model import write_model_folder

        model = os.path.join(workdir, "model")
        if not os.path.isdir(model):
            write_model_folder(model)
        port = _free_port()
        log_path = os.path.join(workdir, log_name or f"server-{mode}-{port}.log")
        env = dict(os.environ)
        for key in ("SGLANG_USE_PICKLE_IPC", "IPC_CONFORMANCE_SGLANG_IPC"):
            env.pop(key, None)
        env.update(MODES[mode])
        if record:
            from .frame_recorder import RECORD_ENV

            env[RECORD_ENV] = record
        argv = [
            sys.executable, "-m", "conformance.engines.sglang.live_server",
            "--model-path", model, "--device", "cpu", "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", "--max-running-requests", "4096",
        ]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            self._wait_ready(proc, port, log_path)
            if mode == "reference":
                self._check_installed(log_path)
            self._sessions[url] = proc.pid  # the server leads its own session (start_new_session)
            yield url
        finally:
            self._sessions.pop(url, None)
            stop_session(proc)

    @staticmethod
    def _wait_ready(proc: "subprocess.Popen[bytes]", port: int, log_path: str) -> None:
        deadline = time.monotonic() + _STARTUP_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerStartError(f"SGLang's server exited with {proc.returncode} while starting:\n{_tail(log_path)}")
            try:
                status, _ = _request(port, "GET", "/health", None, timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise ServerStartError(f"SGLang's server did not answer /health within {_STARTUP_S:.0f} s:\n{_tail(log_path)}")

    @staticmethod
    def _check_installed(log_path: str) -> None:
        from .reference_ipc import INSTALLED_MARKER

        with open(log_path, encoding="utf-8", errors="replace") as fh:
            lines = [line for line in fh if INSTALLED_MARKER in line]
        if len(lines) < 3:
            raise ServerStartError(
                f"the reference codec is installed in {len(lines)} of SGLang's 3 processes (HTTP server, detokenizer, scheduler):\n{_tail(log_path)}"
            )

    # --- the workload -----------------------------------------------------------

    def workload(self, n: int, seed: int) -> List[Dict[str, Any]]:
        """``n`` seeded requests: ``{"rid", "kind", "path", "body", "stream", "abort"}``, the same for every mode."""
        rng = random.Random(seed)
        kinds = ["generate", "generate", "generate_ids", "generate_batch", "chat", "chat", "completion", "abort_held", "disconnect"]
        items = []
        for i in range(n):
            kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
            items.append(self._item(rng, f"w{seed}-{i}", kind))
        return items

    def _item(self, rng: random.Random, rid: str, kind: str) -> Dict[str, Any]:
        def text() -> str:
            return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 12)))

        stream = rng.random() < 0.5
        logprob = rng.random() < 0.7
        top = rng.choice([0, 1, 3])
        max_new = rng.choice([1, 4, 16, 40])
        sampling: Dict[str, Any] = {"max_new_tokens": max_new, "temperature": 0}
        stop_kind = rng.random()
        if stop_kind < 0.2:
            sampling["ignore_eos"] = True
        elif stop_kind < 0.35:
            sampling["stop_token_ids"] = [rng.randrange(3, 512) for _ in range(8)]
        if kind in ("generate", "generate_ids", "generate_batch", "abort_held", "disconnect"):
            body: Dict[str, Any] = {"sampling_params": sampling, "return_logprob": logprob, "top_logprobs_num": top}
            if kind == "generate_ids":
                body["input_ids"] = [rng.randrange(3, 512) for _ in range(rng.randint(1, 24))]
                body["logprob_start_len"] = rng.choice([-1, 0, 1])
                body["token_ids_logprob"] = sorted(rng.sample(range(3, 512), 2))
            elif kind == "generate_batch":
                body["text"] = [text() for _ in range(rng.randint(2, 4))]
                stream = False
            else:
                body["text"] = text()
            if kind in ("abort_held", "disconnect"):
                # held (scripted_scheduler): exactly HOLD_AT tokens, then it waits for its abort
                sampling.update(max_new_tokens=HOLD_FROM, ignore_eos=True)
                sampling.pop("stop_token_ids", None)
                stream = True
            if kind != "generate_batch":
                body["rid"] = rid
            body["stream"] = stream
            return {"rid": rid, "kind": kind, "path": "/generate", "body": body, "stream": stream}
        if kind == "chat":
            body = {"model": "m", "messages": [{"role": "user", "content": text()}], "max_tokens": max_new, "temperature": 0, "stream": stream, "rid": rid}
            if logprob:
                body.update(logprobs=True, top_logprobs=top)
            if "stop_token_ids" in sampling:
                body["stop_token_ids"] = sampling["stop_token_ids"]
            if stream:
                body["stream_options"] = {"include_usage": True}
            return {"rid": rid, "kind": kind, "path": "/v1/chat/completions", "body": body, "stream": stream}
        body = {"model": "m", "prompt": text(), "max_tokens": max_new, "temperature": 0, "stream": stream, "rid": rid}
        if logprob:
            body["logprobs"] = top
        if sampling.get("ignore_eos"):
            body["ignore_eos"] = True
        if stream:
            body["stream_options"] = {"include_usage": True}
        return {"rid": rid, "kind": kind, "path": "/v1/completions", "body": body, "stream": stream}

    def answer(self, url: str, item: Mapping[str, Any]) -> Any:
        """The normalised answer of ``url`` to ``item``: JSON-able, equal across modes when the behaviour is."""
        port = int(url.rsplit(":", 1)[1])
        if not item["stream"]:
            status, data = _request(port, "POST", item["path"], item["body"], timeout=120)
            return {"status": status, "body": _normalise(_json_or_text(data))}
        events = []
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            conn.request("POST", item["path"], json.dumps(item["body"]), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            status = resp.status
            aborted = False
            for event in _sse(resp):
                events.append(event)
                if item["kind"] in ("abort_held", "disconnect") and not aborted and _completion_tokens(event) >= HOLD_AT:
                    if item["kind"] == "disconnect":
                        break  # the client goes away; SGLang aborts the request
                    _request(port, "POST", "/abort_request", {"rid": item["rid"]}, timeout=30)
                    aborted = True
        finally:
            conn.close()
        if item["kind"] == "disconnect":
            last = events[-1] if events else None
            return {"status": status, "seen": _normalise(_truncate(last, HOLD_AT))}
        if item["path"] == "/generate":
            return {"status": status, "final": _normalise(events[-1] if events else None)}
        return {"status": status, "stream": _openai_stream(events)}

    def control(self, url: str) -> Any:
        """After the workload: ``/flush_cache`` (``FlushCacheReqInput`` on the wire) and the scripted scheduler's
        counts through ``/get_server_info`` (``GetInternalStateReq``), which say every abort reached it."""
        port = int(url.rsplit(":", 1)[1])
        status, data = _request(port, "POST", "/flush_cache", None, timeout=30)
        flush = {"status": status, "text": data.decode("utf-8", "replace").strip()}
        status, data = _request(port, "GET", "/get_server_info", None, timeout=30)
        info = _json_or_text(data)
        states = [s.get("scripted") for s in info.get("internal_states", [])] if isinstance(info, dict) else info
        return {"flush_cache": flush, "server_info_status": status, "scheduler": states}

    # --- the benchmark ----------------------------------------------------------

    def bench_argv(self, url: str, *, concurrency: int, prompts: int, input_len: int, output_len: int, seed: int, output_file: str) -> List[str]:
        """``python -m sglang.bench_serving`` against ``url``: the ``random-ids`` dataset (no file), fixed lengths."""
        return [
            sys.executable, "-m", "sglang.bench_serving",
            "--backend", "sglang", "--base-url", url,
            "--dataset-name", "random-ids", "--random-input-len", str(input_len), "--random-output-len", str(output_len),
            "--random-range-ratio", "1.0", "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
            "--seed", str(seed), "--output-file", output_file, "--disable-tqdm", "--warmup-requests", "1",
        ]


    def bench_verdict(self, runs: Sequence[Any]) -> List[str]:
        """The seed's figures (msgpack equal to pickle at concurrency 1, +13.8% req/s at 1024) and issue 25's targets, against ``runs``.

        A target is met when the median of the per-round ratios reaches it, MISSED when its 95%
        interval lies below it, NOT SHOWN when the interval holds it (:func:`~conformance.paired.at_least`).
        """
        from conformance.live.frontend import paired_ratios
        from conformance.paired import at_least, median_interval

        def ratio(mode: str, base: str, c: int, figure: str = "request_throughput") -> Optional[float]:
            found = paired_ratios(runs, mode, base, c, figure)
            return statistics.median(found) if found else None

        def fmt(x: Optional[float]) -> str:
            return "not measured" if x is None else f"x{x:.3f}"

        def req_s(mode: str, base: str, c: int) -> List[float]:
            return paired_ratios(runs, mode, base, c, "request_throughput")

        def said(found: List[float]) -> str:
            """The median of per-round req/s ratios, with its 95% interval where there are rounds enough."""
            interval = median_interval(found)
            return fmt(statistics.median(found)) + ("" if interval is None else f" (95% interval x{interval[0]:.3f}-x{interval[1]:.3f})")

        done = sorted({r.concurrency for r in runs})
        lines = []
        found = req_s("msgpack", "pickle", 1)
        if found:
            equal = abs(statistics.median(found) - 1) <= 0.03
            lines.append(
                f"Seed, concurrency 1 (msgpack equal to pickle): msgpack/pickle req/s {said(found)} "
                f"(median of per-round ratios): {'confirmed' if equal else 'not confirmed'} (equal taken as within 3%)."
            )
        for c in [c for c in done if c > 1]:
            found = req_s("msgpack", "pickle", c)
            if not found:
                continue  # a run without pickle or msgpack says nothing about the seed
            seed = " (seed: x1.138 at 1024, on an H100 with a real model)" if c == 1024 else ""
            lines.append(
                f"Seed, concurrency {c} (msgpack ahead of pickle): msgpack/pickle req/s {said(found)}{seed}: "
                f"{'confirmed' if statistics.median(found) > 1 else 'not confirmed'}."
            )
        for c in done:
            found = req_s("reference", "msgpack", c)
            if found:
                cpu = ratio("reference", "msgpack", c, "server_cpu_ms")
                lines.append(
                    f"Target, concurrency {c}: the reference codec inside SGLang at least SGLang's msgpack: reference/msgpack req/s {said(found)}"
                    f", mean ITL {fmt(ratio('reference', 'msgpack', c, 'mean_itl_ms'))}"
                    + ("" if cpu is None else f", server CPU per request {fmt(cpu)}")
                    + f": {at_least(found, 1.0)}."
                )
        found = req_s("msgpack", "pickle", 256)
        if found:
            lines.append(f"Target, concurrency 256: msgpack at least 1.10x pickle: {fmt(statistics.median(found))}: {at_least(found, 1.10)}.")
        return lines


def _tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def _request(port: int, method: str, path: str, body: Any, *, timeout: float):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        payload = None if body is None else json.dumps(body)
        conn.request(method, path, payload, {"Content-Type": "application/json"} if payload else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


def _sse(resp: http.client.HTTPResponse) -> Iterator[Any]:
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield _json_or_text(data.encode())


def _completion_tokens(event: Any) -> int:
    if isinstance(event, dict):
        meta = event.get("meta_info") or {}
        return int(meta.get("completion_tokens") or len(event.get("output_ids") or ()))
    return 0


def _truncate(event: Any, tokens: int) -> Any:
    """What a client that left after ``tokens`` tokens had: the ids, and the logprobs of those tokens."""
    if not isinstance(event, dict):
        return event
    meta = event.get("meta_info") or {}
    return {
        "output_ids": (event.get("output_ids") or [])[:tokens],
        "output_token_logprobs": (meta.get("output_token_logprobs") or [])[:tokens],
        "prompt_tokens": meta.get("prompt_tokens"),
    }


def _openai_stream(events: List[Any]) -> Any:
    """An OpenAI stream as what it adds up to: per choice text, logprobs and finish reason; the usage chunk.

    Logprobs are per token, whatever chunk carried them; the end-of-sequence
    token's entry (a special token, or empty text) is left out: SGLang
    0.5.23's OpenAI streaming sends it only when the token arrives in the same
    chunk as text (a chunk with no text goes out without logprobs), which
    depends on timing (seen as 2 vs 3 entries for the same request).
    """
    choices: Dict[int, Dict[str, Any]] = {}
    usage = None
    for event in events:
        if not isinstance(event, dict):
            choices.setdefault(-1, {"raw": []})["raw"].append(event)
            continue
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices") or ():
            agg = choices.setdefault(choice.get("index", 0), {"text": "", "logprobs": [], "finish_reason": None, "matched_stop": None})
            delta = choice.get("delta") or {}
            agg["text"] += (delta.get("content") or "") if "delta" in choice else (choice.get("text") or "")
            logprobs = choice.get("logprobs")
            if isinstance(logprobs, dict):
                if "content" in logprobs:  # chat: one entry per token
                    agg["logprobs"].extend(e for e in logprobs.get("content") or () if not _end_token(e))
                else:  # completions: parallel lists per chunk
                    tokens = logprobs.get("tokens") or []
                    for i, token in enumerate(tokens):
                        if token != "" and token not in SPECIAL_TOKENS:
                            agg["logprobs"].append({k: v[i] for k, v in logprobs.items() if isinstance(v, list) and i < len(v)})
            if choice.get("finish_reason") is not None:
                agg["finish_reason"] = choice["finish_reason"]
                agg["matched_stop"] = choice.get("matched_stop")
    return {"choices": [choices[k] for k in sorted(choices)], "usage": _normalise(usage)}


def _end_token(entry: Any) -> bool:
    return isinstance(entry, dict) and (entry.get("bytes") == [] or entry.get("token") in SPECIAL_TOKENS)


def _normalise(value: Any) -> Any:
    """``value`` without request ids, timestamps and latencies (at any depth)."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


#: What ``Engine.live_frontend`` returns for SGLang.
FRONTEND = SGLangFrontend
