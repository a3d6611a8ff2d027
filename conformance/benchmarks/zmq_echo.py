"""Echo peer of the ZeroMQ benchmark: ``python -m conformance.benchmarks.zmq_echo ENDPOINT``.

Binds a ``PAIR`` socket at ``ENDPOINT`` (``ipc://...``). Every message is
``[codec name, *codec frames]``: the peer decodes the frames with that codec,
encodes the decoded message again and sends it back the same way, through
:mod:`reference_codec.transport` (zero-copy frames of 64 KiB or more, waiting
until ZeroMQ has released them). ``[b"ping"]`` is answered with
``[b"pong"]`` and ``[b"stop"]`` ends the process.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List

import zmq

from conformance.benchmarks.codecs import get_codec
from reference_codec import transport

__all__ = ["NamedCodec", "serve"]


class NamedCodec:
    """A benchmark codec whose frames are prefixed with its name, so one peer serves every codec."""

    def __init__(self, name: str):
        self.name = name
        self._tag = name.encode()
        self._codec = get_codec(name)

    def encode(self, obj: Any) -> List[Any]:
        return [self._tag, *self._codec.encode(obj)]

    def decode(self, frames: List[Any]) -> Any:
        return self._codec.decode(frames[1:])


def serve(endpoint: str) -> None:
    ctx: zmq.Context = zmq.Context.instance()
    sock = ctx.socket(zmq.PAIR)
    sock.linger = 0
    sock.bind(endpoint)
    codecs: Dict[str, Any] = {}
    try:
        while True:
            frames = sock.recv_multipart(copy=False)
            name = frames[0].bytes
            if name == b"stop":
                return
            if name == b"ping":
                sock.send_multipart([b"pong"])
                continue
            codec = codecs.get(name)
            if codec is None:
                codec = codecs[name] = NamedCodec(name.decode())
            transport.send(sock, codec.decode(frames), codec)
    finally:
        sock.close()


if __name__ == "__main__":
    serve(sys.argv[1])
