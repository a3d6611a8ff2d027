"""A deliberately misbehaving testee, for meta-tests of the suite and of :mod:`.client`.

Run it as ``python -m conformance.testee.broken_testee MODE [--only-marker]``
with one MODE:

``--crash-on-decode``
    exits (status ``--exit-code``, default 70) in the middle of a ``decode``
    request, after a line on stderr and without answering.
``--hang-on-decode``
    never answers a ``decode`` request (sleeps forever).
``--garbage-response``
    answers a ``decode`` request with a well-framed message whose body is not
    msgpack, then carries on as if nothing happened.
``--drop-device``
    behaves like the reference testee, except that its decoder puts every
    tensor on the CPU: a protocol-correct testee that does not conform
    (visible only where a CUDA device exists).

With ``--only-marker`` the first three misbehave only on a ``decode`` request
whose first frame is exactly :data:`MARKER` (which is not msgpack, so no real
message is ever mistaken for it), and behave like the reference testee
otherwise; that is how recovery after a crash, hang or garbage is tested.
Without it they misbehave on every ``decode`` request.

``hello`` is answered without importing the reference codec (and torch), so
the testee starts in a fraction of a second; the reference testee is loaded
the first time a request needs it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List, Optional

from conformance.testee.protocol import PROTOCOL_VERSION, ProtocolError, read_message, write_message

#: The first frame of a ``decode`` request that triggers the misbehaviour under ``--only-marker``.
MARKER = b"\xc1broken-testee-trigger"

MODES = ("crash-on-decode", "hang-on-decode", "garbage-response", "drop-device")


class BrokenTestee:
    def __init__(self, mode: str, only_marker: bool = False, exit_code: int = 70):
        self.mode, self.only_marker, self.exit_code = mode, only_marker, exit_code
        self.name = f"broken-testee-{mode}"
        self._reference = None

    def reference(self):
        if self._reference is None:
            from conformance.testee.reference_testee import ReferenceTestee
            from reference_codec import ReferenceCodec

            self._reference = ReferenceTestee(name=self.name)
            if self.mode == "drop-device":
                self._reference.own = ReferenceCodec(map_location="cpu")
        return self._reference

    def triggered(self, request: Dict[str, Any]) -> bool:
        if request.get("op") != "decode" or self.mode == "drop-device":
            return False
        frames = request.get("frames")
        return not self.only_marker or (isinstance(frames, list) and frames[:1] == [MARKER])

    def serve(self, requests, responses) -> int:
        while True:
            try:
                request = read_message(requests)
            except ProtocolError as exc:
                print(f"{self.name}: malformed request stream: {exc}", file=sys.stderr)
                return 2
            if request is None:
                return 0
            if request.get("op") == "hello":
                hello = {"name": self.name, "wire_compatible": True, "out_of_band": False, "protocol": PROTOCOL_VERSION}
                write_message(responses, {"id": request.get("id"), "ok": True, **hello})
            elif not self.triggered(request):
                write_message(responses, self.reference().handle(request))
            elif self.mode == "crash-on-decode":
                print(f"{self.name}: crashing on purpose in request {request.get('id')}", file=sys.stderr, flush=True)
                os._exit(self.exit_code)
            elif self.mode == "hang-on-decode":
                print(f"{self.name}: hanging on purpose in request {request.get('id')}", file=sys.stderr, flush=True)
                while True:
                    time.sleep(3600)
            else:  # garbage-response: a valid frame around a body that is not msgpack
                responses.write(b"\x00\x00\x00\x03\xc1\xc1\xc1")
                responses.flush()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="A deliberately misbehaving testee (see the module docstring).")
    group = parser.add_mutually_exclusive_group(required=True)
    for mode in MODES:
        group.add_argument(f"--{mode}", dest="mode", action="store_const", const=mode, help=f"misbehave this way: {mode.replace('-', ' ')}")
    parser.add_argument("--only-marker", action="store_true", help="misbehave only on a decode request for MARKER")
    parser.add_argument("--exit-code", type=int, default=70, help="exit status of --crash-on-decode (default 70)")
    args = parser.parse_args(argv)
    responses = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return BrokenTestee(args.mode, args.only_marker, args.exit_code).serve(sys.stdin.buffer, responses)


if __name__ == "__main__":
    sys.exit(main())
