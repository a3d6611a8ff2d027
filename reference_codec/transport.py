"""Send and receive messages over pyzmq sockets with any codec, as multipart frames.

Every codec (reference, pickle, plug-ins) produces a list of frames; one
message is one ZeroMQ multipart message, so frames of different senders can
never interleave inside a message.

Large frames go out with ``copy=False``: ZeroMQ reads the tensor's own memory
while the message is in flight. Returning before ZeroMQ is done with that
memory is the bug that gives "trailing characters" decode errors when the
sender reuses its buffer, so :func:`send` waits until every zero-copy frame
has been released (``wait=True``, the default) and only then returns. Pass
``wait=False`` to get the :class:`zmq.MessageTracker` instead and keep the
buffers untouched until ``tracker.done``.

Received frames are ZeroMQ frames owned by the receiver (``copy=False``), so
the reference codec decodes out-of-band buffers in place, with no copy.

A receiving process should not die on one bad message: :func:`serve` is the
loop that decodes each multipart message, hands valid ones to the caller,
and drops (and counts, by reason) every message its codec rejects: junk,
truncated or extra frames, a hostile payload. ZeroMQ itself never delivers a
partial multipart message, so a sender that dies mid-message costs nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Protocol, cast

import zmq
import zmq.asyncio

__all__ = ["Codec", "send", "recv", "async_send", "async_recv", "serve", "ReceiveStats", "ZERO_COPY_THRESHOLD"]

#: Frames at least this large are sent without copying (pyzmq copies smaller ones anyway).
ZERO_COPY_THRESHOLD = 64 * 1024


class Codec(Protocol):
    def encode(self, msg: Any) -> List[Any]: ...

    def decode(self, frames: List[Any]) -> Any: ...


def _needs_tracking(frames: List[Any], threshold: int) -> bool:
    return any(memoryview(f).nbytes >= threshold for f in frames)


def send(
    socket: zmq.Socket,
    msg: Any,
    codec: Codec,
    *,
    flags: int = 0,
    wait: bool = True,
    timeout: Optional[float] = None,
    zero_copy_threshold: int = ZERO_COPY_THRESHOLD,
) -> Optional[zmq.MessageTracker]:
    """Encode ``msg`` with ``codec`` and send it as one multipart message.

    With ``wait=True`` returns once ZeroMQ no longer needs any zero-copy
    frame (``zmq.NotDone`` after ``timeout`` seconds); with ``wait=False``
    returns the tracker, or ``None`` when every frame was copied.
    """
    frames = codec.encode(msg)
    if not _needs_tracking(frames, zero_copy_threshold):
        socket.send_multipart(frames, flags=flags, copy=True)
        return None
    # pyzmq returns a tracker whenever track=True
    tracker = cast(zmq.MessageTracker, socket.send_multipart(frames, flags=flags, copy=False, track=True))
    if wait:
        tracker.wait(-1 if timeout is None else timeout)
        return None
    return tracker


def recv(socket: zmq.Socket, codec: Codec, *, flags: int = 0) -> Any:
    """Receive one multipart message and decode it with ``codec`` (its decode error propagates)."""
    frames = socket.recv_multipart(flags=flags, copy=False)
    return codec.decode(frames)


async def async_send(
    socket: zmq.asyncio.Socket,
    msg: Any,
    codec: Codec,
    *,
    flags: int = 0,
    wait: bool = True,
    timeout: Optional[float] = None,
    zero_copy_threshold: int = ZERO_COPY_THRESHOLD,
) -> Optional[zmq.MessageTracker]:
    """:func:`send` for asyncio sockets; waiting for the tracker never blocks the loop."""
    frames = codec.encode(msg)
    if not _needs_tracking(frames, zero_copy_threshold):
        await socket.send_multipart(frames, flags=flags, copy=True)
        return None
    tracker = cast(zmq.MessageTracker, await socket.send_multipart(frames, flags=flags, copy=False, track=True))
    if not wait:
        return tracker
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    delay = 0.0001
    while not tracker.done:
        if deadline is not None and loop.time() >= deadline:
            raise zmq.NotDone("zero-copy frames still in flight")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.01)
    return None


async def async_recv(socket: zmq.asyncio.Socket, codec: Codec, *, flags: int = 0) -> Any:
    """:func:`recv` for asyncio sockets."""
    frames = await socket.recv_multipart(flags=flags, copy=False)
    return codec.decode(frames)


@dataclass
class ReceiveStats:
    """What :func:`serve` saw: messages received, handed on, and dropped (with the first line of each reason)."""

    received: int = 0
    delivered: int = 0
    dropped: int = 0
    reasons: Counter = field(default_factory=Counter)


def serve(
    socket: zmq.Socket,
    codec: Codec,
    handle: Callable[[Any], Any],
    *,
    max_messages: Optional[int] = None,
    idle_timeout: Optional[float] = None,
    until: Optional[Callable[[], bool]] = None,
    stats: Optional[ReceiveStats] = None,
) -> ReceiveStats:
    """Receive and decode messages, calling ``handle(msg)`` for each valid one, until told to stop.

    A message the codec rejects (its ``decode_error``, ``msgspec.DecodeError``
    when it declares none) is dropped and counted in the returned
    :class:`ReceiveStats`; the loop goes on. Exceptions of ``handle`` are the
    caller's and propagate. Stops after ``max_messages`` received messages
    (valid or not), after ``idle_timeout`` seconds without one, or when
    ``until()`` is true (checked at least every 100 ms).
    """
    import msgspec

    decode_error = getattr(codec, "decode_error", msgspec.DecodeError)
    stats = stats if stats is not None else ReceiveStats()
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    last = time.monotonic()
    while max_messages is None or stats.received < max_messages:
        if until is not None and until():
            break
        if not poller.poll(100):
            if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                break
            continue
        frames = socket.recv_multipart(copy=False)
        last = time.monotonic()
        stats.received += 1
        try:
            msg = codec.decode(frames)
        except decode_error as exc:
            stats.dropped += 1
            stats.reasons[str(exc).split("\n", 1)[0][:120]] += 1
            continue
        stats.delivered += 1
        handle(msg)
    return stats
