"""Messages cross real pyzmq sockets intact, with every codec, sync and asyncio."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch
import zmq
import zmq.asyncio

from reference_codec import PickleCodec, ReferenceCodec, transport
from reference_codec.samples import batch_token_id_output

CODECS = [ReferenceCodec(), ReferenceCodec(out_of_band_threshold=1024), PickleCodec(), PickleCodec(out_of_band=True)]


@pytest.fixture(params=["ipc", "tcp"])
def endpoint(request, tmp_path):
    return f"ipc://{tmp_path}/sock" if request.param == "ipc" else "tcp://127.0.0.1:*"


def _pair(ctx, endpoint, kind=zmq.PAIR):
    server = ctx.socket(kind)
    server.linger = 0
    server.bind(endpoint)
    address = server.getsockopt_string(zmq.LAST_ENDPOINT)
    client = ctx.socket(zmq.PAIR if kind == zmq.PAIR else zmq.PUSH)
    client.linger = 0
    client.connect(address)
    return server, client


@pytest.mark.parametrize("codec", CODECS, ids=repr)
def test_message_crosses_a_socket_intact(codec, endpoint):
    ctx = zmq.Context()
    server, client = _pair(ctx, endpoint)
    try:
        msg = batch_token_id_output(4)
        transport.send(client, msg, codec)
        got = transport.recv(server, codec)
        assert got.rids == msg.rids and got.decode_ids == msg.decode_ids
        for a, b in zip(got.routed_experts, msg.routed_experts):
            assert torch.equal(a, b)
    finally:
        server.close()
        client.close()
        ctx.term()


def test_interleaved_senders_never_mix_frames(endpoint):
    codec = ReferenceCodec(out_of_band_threshold=64)
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.linger = 0
    pull.bind(endpoint)
    address = pull.getsockopt_string(zmq.LAST_ENDPOINT)
    per_sender = 50

    def sender(k):
        push = ctx.socket(zmq.PUSH)
        push.linger = 1000
        push.connect(address)
        for i in range(per_sender):
            msg = batch_token_id_output(2, seed=i)
            msg.rids = [f"s{k}-{i}", f"s{k}-{i}b"]
            transport.send(push, msg, codec)
        push.close()

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    seen = set()
    pull.rcvtimeo = 10_000
    for _ in range(4 * per_sender):
        got = transport.recv(pull, codec)
        k, i = got.rids[0][1:].split("-")
        expected = batch_token_id_output(2, seed=int(i))
        assert got.decode_ids == expected.decode_ids
        assert all(torch.equal(a, b) for a, b in zip(got.routed_experts, expected.routed_experts))
        seen.add(got.rids[0])
    for t in threads:
        t.join()
    pull.close()
    ctx.term()
    assert len(seen) == 4 * per_sender


def test_zero_copy_send_returns_only_after_zeromq_released_the_buffer():
    codec = ReferenceCodec(out_of_band_threshold=1024)
    ctx = zmq.Context()
    server, client = _pair(ctx, "tcp://127.0.0.1:*")
    try:
        msg = batch_token_id_output(1)
        tensor = msg.routed_experts[0]
        original = tensor.clone()
        transport.send(client, msg, codec, zero_copy_threshold=1024)
        tensor.fill_(-1)  # the sender reuses its buffer as soon as send returns
        got = transport.recv(server, codec)
        assert torch.equal(got.routed_experts[0], original)
    finally:
        server.close()
        client.close()
        ctx.term()


def test_send_without_waiting_hands_back_the_tracker():
    codec = ReferenceCodec(out_of_band_threshold=1024)
    ctx = zmq.Context()
    server, client = _pair(ctx, "tcp://127.0.0.1:*")
    try:
        tracker = transport.send(client, batch_token_id_output(1), codec, wait=False, zero_copy_threshold=1024)
        assert isinstance(tracker, zmq.MessageTracker)
        transport.recv(server, codec)
        tracker.wait(5)
        assert tracker.done
    finally:
        server.close()
        client.close()
        ctx.term()


def test_received_out_of_band_buffers_are_decoded_in_place():
    codec = ReferenceCodec(out_of_band_threshold=1024)
    ctx = zmq.Context()
    server, client = _pair(ctx, "inproc://zc")
    try:
        transport.send(client, batch_token_id_output(1), codec, zero_copy_threshold=1 << 30)
        frames = server.recv_multipart(copy=False)
        got = codec.decode(frames)
        tensor = got.routed_experts[0]
        frame_view = memoryview(frames[-1])
        assert tensor.data_ptr() == torch.frombuffer(frame_view, dtype=torch.uint8).data_ptr()
    finally:
        server.close()
        client.close()
        ctx.term()


@pytest.mark.parametrize("codec", [ReferenceCodec(out_of_band_threshold=1024), PickleCodec()], ids=repr)
def test_asyncio_send_and_receive(codec, endpoint):
    async def main():
        ctx = zmq.asyncio.Context()
        server = ctx.socket(zmq.PAIR)
        server.linger = 0
        server.bind(endpoint)
        client = ctx.socket(zmq.PAIR)
        client.linger = 0
        client.connect(server.getsockopt_string(zmq.LAST_ENDPOINT))
        try:
            msgs = [batch_token_id_output(2, seed=i) for i in range(5)]
            for m in msgs:
                await transport.async_send(client, m, codec, zero_copy_threshold=1024)
            for m in msgs:
                got = await asyncio.wait_for(transport.async_recv(server, codec), 10)
                assert got.decode_ids == m.decode_ids
        finally:
            server.close()
            client.close()
            ctx.term()

    asyncio.run(main())
