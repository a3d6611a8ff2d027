"""The reference testee: the testee protocol (conformance/PROTOCOL.md) spoken with ReferenceCodec.

Run it as ``python -m conformance.testee.reference_testee [--out-of-band-threshold N]``.
Its own wire is reference wire v1, or v2 with out-of-band buffers of N bytes or
more. It is the example to copy when plugging in another implementation: keep
the loop, replace ``own`` (its own codec) and ``canonical`` (reference v1 in
and out) with yours.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, BinaryIO, Dict, List, Optional

from conformance.testee.protocol import PROTOCOL_VERSION, ProtocolError, read_message, write_message
from reference_codec import DecodeError, EncodeError, ReferenceCodec


class Failure(Exception):
    """A request that fails with ``kind`` ("decode_error", "encode_error", ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ReferenceTestee:
    def __init__(self, out_of_band_threshold: Optional[int] = None, name: str = "reference-testee"):
        self.own = ReferenceCodec(out_of_band_threshold=out_of_band_threshold)  # this testee's wire
        self.canonical = ReferenceCodec()  # reference wire v1: what the suite sends and reads back
        self.name = name if out_of_band_threshold is None else f"{name}-v2"

    def hello(self) -> Dict[str, Any]:
        return {"name": self.name, "wire_compatible": True, "out_of_band": self.own.out_of_band, "protocol": PROTOCOL_VERSION}

    def parse_canonical(self, frames: List[bytes]):
        try:
            return self.canonical.decode(frames)
        except DecodeError as exc:  # canonical input this testee cannot represent
            raise Failure("unsupported", f"cannot parse the canonical message: {exc}") from None

    def encode(self, msg) -> List[bytes]:
        try:
            return [bytes(frame) for frame in self.own.encode(msg)]
        except EncodeError as exc:
            raise Failure("encode_error", str(exc)) from None

    def decode(self, frames: List[bytes]):
        try:
            return self.own.decode(frames)
        except DecodeError as exc:  # bad input: the clean rejection the suite looks for
            raise Failure("decode_error", str(exc)) from None

    def to_canonical(self, msg) -> List[bytes]:
        try:
            return [bytes(frame) for frame in self.canonical.encode(msg)]
        except EncodeError as exc:  # decoded something it cannot write back: its own bug
            raise Failure("internal_error", f"decoded message has no canonical form: {exc}") from None

    def handle(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """The response to one request; never raises."""
        rid = request.get("id")
        try:
            op, frames = request.get("op"), request.get("frames", [])
            if not isinstance(frames, list) or not all(isinstance(f, bytes) for f in frames):
                raise Failure("unsupported", "request frames must be an array of bin")
            if op == "hello":
                return {"id": rid, "ok": True, **self.hello()}
            if op == "encode":
                out = self.encode(self.parse_canonical(frames))
            elif op == "decode":
                out = self.to_canonical(self.decode(frames))
            elif op == "roundtrip":
                out = self.to_canonical(self.decode(self.encode(self.parse_canonical(frames))))
            else:
                raise Failure("unsupported", f"unknown op {op!r:.40}")
            return {"id": rid, "ok": True, "frames": out}
        except Failure as exc:
            return {"id": rid, "ok": False, "error_kind": exc.kind, "message": str(exc)}
        except Exception as exc:  # a bug here must not end the run: report it and go on
            return {"id": rid, "ok": False, "error_kind": "internal_error", "message": f"{type(exc).__name__}: {exc}"}


def claim_stdout() -> BinaryIO:
    """The protocol's own stream on the real stdout, with fd 1 pointed at stderr from now on, so a stray print (from Python or native
    code, or an engine's logger while it is imported) cannot corrupt the frames. Call it before importing what might print."""
    responses = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return responses


def serve(testee: ReferenceTestee, responses: Optional[BinaryIO] = None) -> int:
    """Answer requests on stdin until it closes; 0 at a clean end, 2 on broken framing. ``responses``: from :func:`claim_stdout`, if called earlier."""
    requests = sys.stdin.buffer
    if responses is None:
        responses = claim_stdout()
    while True:
        try:
            request = read_message(requests)
        except ProtocolError as exc:
            print(f"{testee.name}: malformed request stream: {exc}", file=sys.stderr)
            return 2
        if request is None:
            return 0
        response = testee.handle(request)
        try:
            write_message(responses, response)
        except ProtocolError as exc:  # an answer too large for the protocol
            write_message(responses, {"id": response["id"], "ok": False, "error_kind": "internal_error", "message": str(exc)})


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out-of-band-threshold", type=int, default=None, metavar="N",
        help="speak wire v2: buffers of N bytes or more travel as their own frames (default: wire v1)",
    )
    args = parser.parse_args(argv)
    if args.out_of_band_threshold is not None and args.out_of_band_threshold < 0:
        parser.error("--out-of-band-threshold must be >= 0")
    return serve(ReferenceTestee(args.out_of_band_threshold))


if __name__ == "__main__":
    sys.exit(main())
