"""Property 7: over real pyzmq sockets, every message arrives once and intact, senders interleaved.

``ipc://`` and ``tcp://127.0.0.1``, multipart frames, three senders sharing
one receiver. Messages are matched by a per-message id carried in ``rid``/``rids``
where the type has one, else by position within each sender's stream. For
an engine whose frames do not say their type (vLLM), a socket carries one
message type, as the engine's own sockets do. A codec that declares
``thread_safe = False`` encodes one message at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
import zmq
from hypothesis import given
from hypothesis import strategies as st

from conformance.findings import Finding
from conformance.properties import ENGINE, MESSAGE_TAGS, PropertyFailure, check_equivalent, message_strategy
from reference_codec import transport

SENDERS = 3
#: How long the receiver waits for a message no sender reported failing.
RECEIVE_TIMEOUT_S = 20.0


@pytest.fixture(params=["ipc", "tcp"], scope="module")
def endpoint(request, tmp_path_factory):
    if request.param == "ipc":
        return f"ipc://{tmp_path_factory.mktemp('zmq')}/suite.sock"
    return "tcp://127.0.0.1:*"



def _receive(pull, threads, errors, codec, streams, received):
    """The next multipart message; a sender's failure is reported as soon as the message it failed on is due."""
    deadline = time.monotonic() + RECEIVE_TIMEOUT_S
    while not pull.poll(50):
        if errors and not any(t.is_alive() for t in threads):
            k, i, exc = errors[0]
            raise PropertyFailure(
                codec=codec.name,
                what=f"sender {k} could not send message {i}: {type(exc).__qualname__}: {str(exc)[:200]}",
                message=streams[k][i],
                finding=Finding.of("sender-raises", type(exc).__qualname__, str(exc)),
            )
        if time.monotonic() > deadline:
            raise PropertyFailure(
                codec=codec.name, what=f"a message was lost: {len(received)} of {sum(map(len, streams))} arrived", finding=Finding.of("lost", "", "a message was lost")
            )
    return pull.recv_multipart(copy=False)


def _decode_received(codec, frames, key, msg):
    """Decode what the socket delivered (``zmq.Frame`` objects, zero-copy); refusing it is this property's failure."""
    try:
        return codec.decode(frames, type(msg))
    except Exception as exc:
        raise PropertyFailure(
            codec=codec.name,
            what=f"message {key[1]} of sender {key[0]} cannot be decoded as received ({type(frames[0]).__name__} frames)",
            message=msg,
            details=[f"{type(exc).__qualname__}: {str(exc)[:200]}"],
            finding=Finding.of("lost", type(exc).__qualname__, str(exc)),
        ) from None


@given(data=st.data())
def test_every_message_arrives_intact_with_interleaved_senders(codec, endpoint, data):
    tags = st.sampled_from(MESSAGE_TAGS)
    if ENGINE.typed_frames:
        tags = st.just(data.draw(tags, label="the socket's message type"))
    streams = [
        data.draw(st.lists(tags.flatmap(lambda tag: message_strategy(tag, codec)), min_size=1, max_size=4), label=f"sender {k}")
        for k in range(SENDERS)
    ]
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    pull.bind(endpoint)
    address = pull.getsockopt_string(zmq.LAST_ENDPOINT)
    errors = []
    # A codec that declares it is not thread-safe is used as its engine uses it: one encode at a time.
    encoding = contextlib.nullcontext() if codec.caps.thread_safe else threading.Lock()

    def send(k):
        push = ctx.socket(zmq.PUSH)
        push.linger = 5_000
        push.connect(address)
        i = 0
        try:
            for i, msg in enumerate(streams[k]):
                # A two-frame envelope [sender, index] ahead of the codec's frames keeps matching codec-independent.
                with encoding:
                    body = codec.encode(msg)
                frames = [f"{k}".encode(), f"{i}".encode(), *body]
                push.send_multipart(frames, copy=False)
        except Exception as exc:  # reported by the receiving side
            errors.append((k, i, exc))
        finally:
            push.close()

    threads = [threading.Thread(target=send, args=(k,)) for k in range(SENDERS)]
    for t in threads:
        t.start()
    received = {}
    try:
        for _ in range(sum(map(len, streams))):
            frames = _receive(pull, threads, errors, codec, streams, received)
            key = (int(bytes(frames[0])), int(bytes(frames[1])))
            if key in received:
                raise PropertyFailure(codec=codec.name, what=f"message {key} arrived twice", finding=Finding.of("lost", "", "a message arrived twice"))
            received[key] = _decode_received(codec, frames[2:], key, streams[key[0]][key[1]])
    finally:
        for t in threads:
            t.join()
        pull.close()
        ctx.term()
    for k, stream in enumerate(streams):
        for i, msg in enumerate(stream):
            check_equivalent(msg, received[(k, i)], codec=codec.name, what=f"message {i} of sender {k} changed in transit", msg=msg)


def test_transport_helpers_carry_the_codec_frames(codec, tmp_path):
    """``reference_codec.transport.send/recv`` with this codec, including its zero-copy frames."""
    if ENGINE.typed_frames:
        pytest.skip(f"reference_codec.transport.recv decodes without a message type; engine {ENGINE.name}'s frames do not say theirs")
    if not ENGINE.samples(0):
        pytest.skip(f"engine {ENGINE.name} has no sample message")
    ctx = zmq.Context()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    a.linger = b.linger = 0
    a.bind(f"ipc://{tmp_path}/pair.sock")
    b.connect(f"ipc://{tmp_path}/pair.sock")
    b.rcvtimeo = 20_000
    try:
        _, msg = ENGINE.samples(0)[-1]
        transport.send(a, msg, codec, zero_copy_threshold=1024)
        check_equivalent(msg, transport.recv(b, codec), codec=codec.name, what="transport.send/recv changed the message", msg=msg)
    finally:
        a.close()
        b.close()
        ctx.term()
