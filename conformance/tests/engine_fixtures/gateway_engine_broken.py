"""A broken codec for the example third engine (examples/third-engine): it drops ``logprobs`` on encode."""

from __future__ import annotations

import msgspec
from gateway_engine import MsgspecCodec


class DropsLogprobs(MsgspecCodec):
    name = "gateway-drops-logprobs"

    def encode(self, msg):
        if getattr(msg, "logprobs", None) is not None:
            msg = msgspec.structs.replace(msg, logprobs=None)
        return super().encode(msg)
