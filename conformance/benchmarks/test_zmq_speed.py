"""ZeroMQ round trips over ``ipc://`` between two processes, per codec.

One timed call is a full round trip as the engine's processes do it: encode
and send (:func:`reference_codec.transport.send`), the echo peer
(:mod:`conformance.benchmarks.zmq_echo`, a separate process) receives,
decodes, encodes and sends back, and this process receives and decodes. The
report derives round trips per second (``1 / median``) and GB/s
(``2 x bytes on the wire / median``) from the JSON.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
import zmq

from conformance.benchmarks import corpus
from conformance.benchmarks.codecs import CODEC_NAMES, unavailable, wire_bytes
from conformance.benchmarks.zmq_echo import NamedCodec
from reference_codec import transport

ZMQ_FAMILIES = [
    f
    for f in ["control-FlushCacheReqInput", "BatchTokenIDOutput-32", "BatchTokenIDOutput-256", "tensor-1MiB", "tensor-64MiB"]
    if f in corpus.FAMILIES
]
STARTUP_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def echo_socket():
    tmp = tempfile.mkdtemp(prefix="ipc-bench-")
    endpoint = f"ipc://{os.path.join(tmp, 'echo')}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    peer = subprocess.Popen([sys.executable, "-m", "conformance.benchmarks.zmq_echo", endpoint], env=env)
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.PAIR)
    sock.linger = 0
    sock.connect(endpoint)
    try:
        sock.send_multipart([b"ping"])
        if not sock.poll(STARTUP_TIMEOUT_S * 1000):
            pytest.fail(f"the echo peer did not answer within {STARTUP_TIMEOUT_S} s (exit code {peer.poll()})")
        sock.recv_multipart()
        yield sock
    finally:
        try:
            sock.send_multipart([b"stop"], flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass
        try:
            peer.wait(timeout=10)
        except subprocess.TimeoutExpired:
            peer.kill()
            peer.wait()
        sock.close()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


@pytest.mark.parametrize("codec_name", CODEC_NAMES)
@pytest.mark.parametrize("family", ZMQ_FAMILIES)
def test_zmq_round_trip(benchmark, echo_socket, family, codec_name):
    reason = unavailable(codec_name)
    if reason:
        pytest.skip(reason)
    codec = NamedCodec(codec_name)
    inner = codec._codec
    obj = inner.prepare(corpus.build(family))
    sock = echo_socket
    benchmark.group = f"{family} zmq"
    benchmark.extra_info.update(
        family=family, op="zmq", codec=codec_name, bytes_on_wire=wire_bytes(inner.encode(obj)), transport="ipc"
    )

    def round_trip():
        transport.send(sock, obj, codec)
        return transport.recv(sock, codec)

    round_trip()  # the peer builds this codec once, outside the timing
    benchmark(round_trip)
