"""Reproduce libzmq#4660: closing a PUSH socket loses what a slow PULL peer has not read yet.

``python -m reference_codec.tests.repro_libzmq_4660 [--runs 3] [--messages 20000]``

Each run sends ``--messages`` AbortReq over ``ipc://`` and ``tcp://127.0.0.1``
with high-water marks of 64 and LINGER 5 s, closes the sender right after its
last send, and has the receiver (``transport.serve``) pause 2 ms every 500
messages, as a busy scheduler would. It prints how many arrived. Timing
dependent, so not a test: ``test_transport_faults`` keeps the sender open until
the receiver is done, which is the remedy. Exit status 0 whatever it finds.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

import zmq

from reference_codec import ReferenceCodec, transport

from .test_transport_faults import _abort, _pull, _push


def _one_run(kind: str, total: int) -> int:
    codec = ReferenceCodec()
    ctx = zmq.Context()
    with tempfile.TemporaryDirectory() as tmp:
        endpoint = f"ipc://{tmp}/sock" if kind == "ipc" else "tcp://127.0.0.1:*"
        pull, address = _pull(ctx, endpoint, hwm=64)

        def sender():
            push = _push(ctx, address, hwm=64)
            for i in range(total):
                transport.send(push, _abort(i), codec)
            push.close()  # at once: the receiver is still behind

        def slow(msg):
            if int(msg.rid[4:]) % 500 == 0:
                time.sleep(0.002)

        thread = threading.Thread(target=sender)
        thread.start()
        stats = transport.serve(pull, codec, slow, max_messages=total, idle_timeout=3)
        thread.join()
        pull.close()
    ctx.term()
    return stats.delivered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions per transport (default 3)")
    parser.add_argument("--messages", type=int, default=20000, help="messages per run (default 20000)")
    args = parser.parse_args()
    print(f"libzmq {zmq.zmq_version()}, pyzmq {zmq.__version__}")
    for kind in ("ipc", "tcp"):
        for run in range(args.runs):
            got = _one_run(kind, args.messages)
            print(f"{kind}:// run {run}: {got} of {args.messages} arrived, {args.messages - got} lost")


if __name__ == "__main__":
    main()
