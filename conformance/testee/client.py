"""The suite's side of the testee protocol: a program under test, driven as a codec.

:class:`TesteeCodec` starts a testee program (``conformance/PROTOCOL.md``) and
offers the codec interface of :mod:`conformance.plugin` over it::

    with TesteeCodec([sys.executable, "-m", "conformance.testee.reference_testee"]) as codec:
        frames = codec.encode(msg)        # the testee's own encoding of msg
        same = codec.decode(frames)       # decoded by the testee, read back as a reference message

Messages cross the pipe as canonical reference wire v1: ``encode`` writes
``msg`` with :class:`reference_codec.ReferenceCodec` and asks the testee for
*its* encoding; ``decode`` hands the testee frames in its wire and reads the
canonical v1 frame it answers with back into a reference message.

Every way a testee can fail is an exception of its own, so the suite records
it against the test in progress and carries on:

``TesteeDecodeError``
    the testee rejected bad input cleanly (``error_kind`` ``decode_error``).
    A ``msgspec.DecodeError`` and *not* a ``TesteeError``: it is the
    behaviour the suite asks for.
``TesteeEncodeError``
    ``encode_error`` on ``encode`` or ``roundtrip``. Deliberately not a
    ``TypeError``: the testee is only sent messages the reference encodes, so
    its refusal is never the clean refusal of a bad value.
``TesteeUnsupported``
    ``unsupported``: the testee cannot represent the message or does not know
    the operation.
``TesteeError``
    any other reported error (``internal_error``, a ``decode_error`` in answer
    to ``encode``, ...); the base of all of these but ``TesteeDecodeError``.
``TesteeCrashed``
    the program exited or closed its stdout mid-request.
``TesteeTimeout``
    no answer within ``timeout`` seconds.
``TesteeProtocolError``
    an answer that breaks the protocol.

After a crash, a timeout or a protocol error the program is killed and the
next request starts a fresh one (counted in :attr:`TesteeCodec.restarts`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple, Type

import msgspec

from . import protocol
from .protocol import DEFAULT_MAX_MESSAGE_BYTES, ERROR_KINDS, PROTOCOL_VERSION, VALUE_OPS, ProtocolError, TruncatedMessage

__all__ = [
    "TesteeCodec",
    "TesteeError",
    "TesteeDecodeError",
    "TesteeEncodeError",
    "TesteeUnsupported",
    "TesteeCrashed",
    "TesteeTimeout",
    "TesteeProtocolError",
]

#: Bytes of the testee's stderr kept for crash reports (the most recent ones).
STDERR_KEEP_BYTES = 64 << 10
#: Characters of that tail quoted in an error message.
STDERR_QUOTE_CHARS = 4000


# --- errors ---------------------------------------------------------------------------


class TesteeError(Exception):
    """The testee failed: an error it reported, or a crash, hang or malformed answer.

    ``kind`` is the reported ``error_kind``, or ``"crash"``, ``"timeout"``,
    ``"protocol"`` or ``"start"`` for failures the client detected itself;
    ``testee_message`` is the testee's own message, when it sent one.
    """

    __test__ = False  # "Test..." names: keep pytest from collecting them where they are imported

    def __init__(self, message: str, *, kind: str, testee_message: Optional[str] = None):
        super().__init__(message)
        self.kind = kind
        self.testee_message = testee_message


class TesteeDecodeError(msgspec.DecodeError):
    """The testee rejected the frames as bad input; ``testee_message`` says why."""

    kind = "decode_error"
    __test__ = False

    def __init__(self, message: str, *, testee_message: Optional[str] = None):
        super().__init__(message)
        self.testee_message = testee_message if testee_message is not None else message


class TesteeEncodeError(TesteeError):
    """The testee could not encode the message (``encode_error``)."""


class TesteeUnsupported(TesteeError):
    """The testee cannot represent the message, or does not know the operation (``unsupported``)."""


class TesteeCrashed(TesteeError):
    """The testee exited (or closed its stdout) during a request.

    ``returncode`` is its exit status (negative: killed by that signal; ``None``
    if it closed stdout but would not exit and was killed); ``stderr_tail`` the
    last of what it wrote to stderr.
    """

    def __init__(self, message: str, *, returncode: Optional[int], stderr_tail: str):
        super().__init__(message, kind="crash")
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class TesteeTimeout(TesteeError):
    """The testee did not answer within ``timeout`` seconds and was killed."""

    def __init__(self, message: str, *, timeout: float, stderr_tail: str):
        super().__init__(message, kind="timeout")
        self.timeout = timeout
        self.stderr_tail = stderr_tail


class TesteeProtocolError(TesteeError):
    """The testee answered with something the protocol does not allow."""

    def __init__(self, message: str, *, stderr_tail: str = ""):
        super().__init__(message, kind="protocol")
        self.stderr_tail = stderr_tail


# --- one running testee ---------------------------------------------------------------


class _Process:
    """A started testee: its pipes, a bounded stderr buffer and a kill switch for the watchdog."""

    def __init__(self, argv: Sequence[str], env: Optional[Dict[str, str]], cwd: Optional[str]):
        posix = os.name == "posix"
        # Its own process group on POSIX, so that a kill also reaches anything
        # it started (a shell wrapper's child would otherwise keep the pipes open).
        self.popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=posix,
        )
        # All three are pipes (PIPE above), so Popen opened each of them.
        assert self.popen.stdin is not None and self.popen.stdout is not None and self.popen.stderr is not None
        self.stdin: IO[bytes] = self.popen.stdin
        self.stdout: IO[bytes] = self.popen.stdout
        self._stderr_pipe: IO[bytes] = self.popen.stderr
        self._group = posix
        self._lock = threading.Lock()  # orders kills against reaping, so a reused pid is never signalled
        self.expired = False
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, name=f"testee-stderr-{self.popen.pid}", daemon=True)
        self._stderr_thread.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _drain_stderr(self) -> None:
        stream = self._stderr_pipe
        try:
            fd = stream.fileno()
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                with self._stderr_lock:
                    self._stderr += chunk
                    if len(self._stderr) > 2 * STDERR_KEEP_BYTES:
                        del self._stderr[:-STDERR_KEEP_BYTES]
        except (OSError, ValueError):
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass

    def stderr_tail(self, wait: float = 0.0) -> str:
        """The last of the testee's stderr; ``wait`` lets the drain thread catch up after an exit."""
        if wait:
            self._stderr_thread.join(wait)
        with self._stderr_lock:
            data = bytes(self._stderr[-STDERR_KEEP_BYTES:])
        return data.decode("utf-8", "replace")[-STDERR_QUOTE_CHARS:]

    def kill(self) -> None:
        with self._lock:
            if self.popen.returncode is not None:
                return
            try:
                if self._group:
                    os.killpg(self.popen.pid, signal.SIGKILL)
                else:
                    self.popen.kill()
            except (ProcessLookupError, PermissionError, OSError):
                pass

    def expire(self) -> None:
        """Called by the watchdog timer: the request ran out of time."""
        self.expired = True
        self.kill()

    def wait(self, timeout: float) -> Optional[int]:
        """Its exit status, waiting up to ``timeout`` seconds; ``None`` if still running."""
        with self._lock:
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return None

    def alive(self) -> bool:
        with self._lock:
            return self.popen.poll() is None

    def close(self, grace: float) -> None:
        """Close its stdin (a testee exits at end of input), wait ``grace`` seconds, then kill."""
        try:
            self.stdin.close()
        except (OSError, ValueError):
            pass
        if grace <= 0 or self.wait(grace) is None:
            self.kill()
            self.wait(5.0)
        try:
            self.stdout.close()
        except (OSError, ValueError):
            pass
        self._stderr_thread.join(1.0)


def _describe_exit(returncode: Optional[int]) -> str:
    if returncode is None:
        return "closed its stdout but did not exit (killed)"
    if returncode < 0:
        try:
            return f"was killed by signal {-returncode} ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _quote(stderr_tail: str) -> str:
    text = stderr_tail.rstrip()
    if not text:
        return "; it wrote nothing to stderr"
    return "; the end of its stderr:\n" + "\n".join("    " + line for line in text.splitlines())


# --- the codec ------------------------------------------------------------------------


class TesteeCodec:
    """A testee program as a codec: ``encode(msg) -> frames`` and ``decode(frames) -> msg``.

    Parameters
    ----------
    argv
        The command that starts the testee (a list of strings, no shell).
    timeout
        Seconds one request may take before the testee is killed
        (:class:`TesteeTimeout`).
    startup_timeout
        Seconds the first ``hello`` may take, start-up included (programs that
        import a large runtime need more than one request does); default
        ``max(timeout, 60)``.
    max_message_bytes
        Largest protocol message sent or accepted (see :mod:`.protocol`).
    env, cwd
        Passed to :class:`subprocess.Popen`.

    The program starts lazily: on the first request, or the first read of a
    declared capability (``name``, ``wire_compatible``, ``out_of_band``,
    ``devices``), which the ``hello`` answer provides. Requests are serialised
    by a lock, so one instance may be shared between threads. ``close()``
    (or leaving a ``with`` block) stops the program; a later request starts it
    again.
    """

    decode_error = TesteeDecodeError
    __test__ = False

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 30.0,
        startup_timeout: Optional[float] = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None,
    ):
        if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"argv must be a non-empty list of str (no shell string), got {argv!r}")
        for label, value in (("timeout", timeout), ("startup_timeout", startup_timeout)):
            if value is None and label == "startup_timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{label} must be a number of seconds > 0, got {value!r}")
        from reference_codec import ReferenceCodec  # imported here: the protocol module stays light

        self.argv: Tuple[str, ...] = tuple(argv)
        self.timeout = float(timeout)
        self.startup_timeout = float(startup_timeout) if startup_timeout is not None else max(self.timeout, 60.0)
        self.max_message_bytes = protocol.check_max_size(max_message_bytes)
        self.env, self.cwd = env, cwd
        #: Programs started after the first (after crashes, hangs, protocol errors or close()).
        self.restarts = 0
        self._reference = ReferenceCodec()
        self._lock = threading.Lock()
        self._proc: Optional[_Process] = None
        self._hello: Optional[Dict[str, Any]] = None
        self._started = 0
        self._next_id = 1

    def __repr__(self) -> str:
        name = self._hello["name"] if self._hello else self.argv[0]
        state = f"pid {self._proc.pid}" if self._proc is not None else "not running"
        return f"<TesteeCodec {name!r} ({state})>"

    # --- declared capabilities (from hello) ---------------------------------------

    def _capability(self, key: str) -> Any:
        if self._hello is None:
            with self._lock:
                if self._hello is None:
                    self._ensure_started()
        assert self._hello is not None  # a successful start records the hello (or it raises)
        return self._hello[key]

    @property
    def name(self) -> str:
        return self._capability("name")

    @property
    def wire_compatible(self) -> bool:
        return self._capability("wire_compatible")

    @property
    def out_of_band(self) -> bool:
        return self._capability("out_of_band")

    @property
    def devices(self) -> Optional[Tuple[str, ...]]:
        """Devices the testee declared it preserves, or ``None`` (the suite's default) if it declared none."""
        return self._capability("devices")

    @property
    def pid(self) -> Optional[int]:
        """The running program's process id, or ``None``."""
        proc = self._proc
        return proc.pid if proc is not None else None

    # --- the codec interface -----------------------------------------------------------

    def encode(self, msg: Any) -> List[bytes]:
        """The testee's frames for ``msg``.

        ``msg`` is first written as reference wire v1, so a value the reference
        cannot carry raises the reference's ``EncodeError`` without reaching
        the testee.
        """
        response = self.request("encode", self._reference.encode(msg))
        if response["ok"]:
            return response["frames"]
        raise self._reported("encode", response)

    def decode(self, frames: Any) -> Any:
        """The message the testee decodes from ``frames`` (its wire), as a reference message.

        Raises :class:`TesteeDecodeError` when the testee rejects the frames
        (also, without asking it, when ``frames`` is not bytes-like or a list
        of bytes-like objects, exactly where the reference codec would raise).
        """
        response = self.request("decode", self._frames_for_decode(frames))
        if response["ok"]:
            return self._from_canonical("decode", response["frames"])
        if response["error_kind"] == "decode_error":
            raise TesteeDecodeError(
                f"{self._name()}: {response['message']}", testee_message=response["message"]
            )
        raise self._reported("decode", response)

    def roundtrip(self, msg: Any) -> Any:
        """``decode(encode(msg))`` done inside the testee in one request."""
        response = self.request("roundtrip", self._reference.encode(msg))
        if response["ok"]:
            return self._from_canonical("roundtrip", response["frames"])
        raise self._reported("roundtrip", response)

    def request(self, op: str, frames: Sequence[Any] = (), **fields: Any) -> Dict[str, Any]:
        """Send one request (``fields``: more keys of it, such as ``type`` and ``value``) and return the validated response map (``ok`` true or false).

        Crashes, timeouts and malformed answers raise (and restart the
        testee); errors the testee reports are returned, not raised.
        """
        with self._lock:
            proc = self._ensure_started()
            return self._exchange(proc, op, list(frames), self.timeout, **fields)

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the testee now (normally it starts on first use)."""
        with self._lock:
            self._ensure_started()

    def close(self) -> None:
        """Stop the testee: end its input, give it two seconds to exit, then kill it."""
        with self._lock:
            self._stop(grace=2.0)

    def __enter__(self) -> "TesteeCodec":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._stop(grace=0.0)
        except Exception:
            pass

    def _stop(self, grace: float) -> None:
        proc = self.__dict__.get("_proc")
        if proc is not None:
            self._proc = None
            proc.close(grace)

    # --- internals ----------------------------------------------------------------------

    def _name(self) -> str:
        return self._hello["name"] if self._hello else f"testee {self.argv[0]}"

    def _ensure_started(self) -> _Process:
        proc = self._proc
        if proc is not None and proc.alive():
            return proc
        if proc is not None:  # exited between requests
            self._stop(grace=0.0)
        try:
            proc = _Process(self.argv, self.env, self.cwd)
        except OSError as exc:
            raise TesteeError(f"cannot start testee {list(self.argv)!r}: {exc}", kind="start") from exc
        if self._started:
            self.restarts += 1
        self._started += 1
        try:
            response = self._exchange(proc, "hello", [], self.startup_timeout, protocol=PROTOCOL_VERSION)
        except BaseException:
            proc.close(0.0)
            raise
        if not response["ok"]:
            proc.close(0.0)
            raise TesteeProtocolError(
                f"{self._name()} refused hello ({response['error_kind']}): {response['message']}",
                stderr_tail=proc.stderr_tail(),
            )
        hello = self._check_hello(proc, response)
        if self._hello is None:
            self._hello = hello
        elif hello != self._hello:
            proc.close(0.0)
            raise TesteeProtocolError(
                f"the restarted testee declares {hello}, but the first one declared {self._hello}"
            )
        self._proc = proc
        return proc

    def _check_hello(self, proc: _Process, response: Dict[str, Any]) -> Dict[str, Any]:
        def bad(what: str) -> TesteeProtocolError:
            proc.close(0.0)
            return TesteeProtocolError(f"testee {self.argv[0]!r}: hello answer {what}: {response!r:.300}")

        if response.get("protocol") != PROTOCOL_VERSION:
            raise bad(f"declares protocol {response.get('protocol')!r}; this suite speaks {PROTOCOL_VERSION}")
        for key, kind in (("name", str), ("wire_compatible", bool), ("out_of_band", bool)):
            if type(response.get(key)) is not kind:
                raise bad(f"needs {key!r} as a {kind.__name__}")
        if not response["name"]:
            raise bad("has an empty name")
        devices = response.get("devices")
        if devices is not None:
            if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
                raise bad("has 'devices' that is not an array of str")
            devices = tuple(devices)
        return {
            "name": response["name"],
            "wire_compatible": response["wire_compatible"],
            "out_of_band": response["out_of_band"],
            "devices": devices,
        }

    def _exchange(self, proc: _Process, op: str, frames: List[Any], timeout: float, **extra: Any) -> Dict[str, Any]:
        rid = self._next_id
        self._next_id += 1
        where = f"{op} request {rid}"
        try:
            body = protocol.encode_message({"id": rid, "op": op, "frames": frames, **extra}, max_size=self.max_message_bytes)
        except ProtocolError as exc:  # nothing was written: the testee is still in step
            raise TesteeError(f"{where} is too large for the protocol: {exc}", kind="protocol") from None
        in_step = False
        watchdog = threading.Timer(timeout, proc.expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            try:
                protocol.write_frame(proc.stdin, body)
            except (OSError, ValueError) as exc:
                raise self._failure(proc, where, timeout, f"its stdin is closed ({exc})", ended=True) from None
            try:
                response = protocol.read_message(proc.stdout, max_size=self.max_message_bytes)
            except TruncatedMessage as exc:
                raise self._failure(proc, where, timeout, str(exc), ended=True) from None
            except ProtocolError as exc:
                raise self._failure(proc, where, timeout, str(exc), ended=False) from None
            except (OSError, ValueError) as exc:
                raise self._failure(proc, where, timeout, f"reading its stdout failed ({exc})", ended=True) from None
            if response is None:
                raise self._failure(proc, where, timeout, "its stdout ended", ended=True)
            problem = _response_problem(response, rid, op)
            if problem is not None:
                raise TesteeProtocolError(
                    f"{self._name()} answered {where} with {problem}: {response!r:.300}",
                    stderr_tail=proc.stderr_tail(),
                )
            in_step = True
        finally:
            watchdog.cancel()
            if not in_step:  # out of step, confused, or interrupted (KeyboardInterrupt): start afresh
                self._discard(proc)
        return response

    def _failure(self, proc: _Process, where: str, timeout: float, what: str, *, ended: bool) -> TesteeError:
        """Classify a broken exchange (timeout, crash or garbage); kill the process and forget it."""
        if proc.expired:
            self._discard(proc)
            tail = proc.stderr_tail(wait=1.0)
            return TesteeTimeout(
                f"{self._name()} did not answer {where} within {timeout:g} s and was killed{_quote(tail)}",
                timeout=timeout,
                stderr_tail=tail,
            )
        # A testee whose output ended is usually exiting: wait for its status.
        returncode = proc.wait(2.0 if ended else 0.2)
        self._discard(proc)
        tail = proc.stderr_tail(wait=1.0)
        if ended:
            return TesteeCrashed(
                f"{self._name()} {_describe_exit(returncode)} during {where} ({what}){_quote(tail)}",
                returncode=returncode,
                stderr_tail=tail,
            )
        status = f" (it then {_describe_exit(returncode)})" if returncode is not None else ""
        return TesteeProtocolError(
            f"{self._name()} broke the framing in answer to {where}: {what}{status}{_quote(tail)}", stderr_tail=tail
        )

    def _discard(self, proc: _Process) -> None:
        proc.close(0.0)
        if self._proc is proc:
            self._proc = None

    def _reported(self, op: str, response: Dict[str, Any]) -> TesteeError:
        kind, message = response["error_kind"], response["message"]
        cls: Type[TesteeError]
        if kind == "encode_error" and op in ("encode", "roundtrip"):
            cls = TesteeEncodeError
        elif kind == "unsupported":
            cls = TesteeUnsupported
        else:
            cls = TesteeError
        return cls(f"{self._name()} failed {op} ({kind}): {message}", kind=kind, testee_message=message)

    def _from_canonical(self, op: str, frames: List[bytes]) -> Any:
        try:
            return self._reference.decode(frames)
        except msgspec.DecodeError as exc:
            # Not a clean rejection: the testee said ok and then sent a frame that is not canonical.
            raise TesteeProtocolError(
                f"{self._name()} answered {op} ok, but its frame is not valid reference wire v1: {exc}"
            ) from None

    @staticmethod
    def _frames_for_decode(frames: Any) -> List[Any]:
        if isinstance(frames, (bytes, bytearray, memoryview)):
            frames = [frames]
        elif not isinstance(frames, (list, tuple)):
            raise TesteeDecodeError(f"frames must be a list of bytes-like objects, got {type(frames).__qualname__}")
        out = []
        for i, frame in enumerate(frames):
            if type(frame) in (bytes, bytearray):
                out.append(frame)
                continue
            try:
                view = memoryview(frame)
            except TypeError:
                raise TesteeDecodeError(f"frame {i} is a {type(frame).__qualname__}, not bytes-like") from None
            out.append(view.cast("B") if view.c_contiguous else view.tobytes())
        return out


def _response_problem(response: Dict[str, Any], rid: int, op: str) -> Optional[str]:
    """What is wrong with ``response`` as the answer to request ``rid`` (an ``op``), or ``None``."""
    if type(response.get("id")) is not int or response["id"] != rid:
        return f"id {response.get('id')!r} (expected {rid})"
    ok = response.get("ok")
    if type(ok) is not bool:
        return "no bool 'ok'"
    if not ok:
        if response.get("error_kind") not in ERROR_KINDS:
            return f"error_kind {response.get('error_kind')!r} (expected one of {', '.join(ERROR_KINDS)})"
        if type(response.get("message")) is not str:
            return "no str 'message'"
        return None
    if op == "hello":
        return None  # checked field by field in _check_hello
    if op in VALUE_OPS and "value" not in response:
        return "no 'value'"
    if op == "decode_value":
        return None
    frames = response.get("frames")
    if not isinstance(frames, list) or not frames or not all(type(f) is bytes for f in frames):
        return "'frames' that is not a non-empty array of bin"
    if op not in ("encode", "encode_value") and len(frames) != 1:
        return f"{len(frames)} frames (canonical wire v1 is one frame)"
    return None
