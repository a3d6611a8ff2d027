"""A third engine in one module: an in-house gateway's own IPC schema, tested by the whole suite.

Run it from the repository root::

    PYTHONPATH=examples/third-engine python -m conformance \\
        --engine gateway_engine:ENGINE --codec msgspec -n 2

``ENGINE`` says everything the suite needs: the message types, that a
socket (not the frame) says the type, how to draw messages (the generic
builder, with the one field whose meaning the types cannot say), the
built-in codecs and the wire reference. Nothing outside this file changes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import hypothesis.strategies as st
import msgspec

from conformance.engines import Engine
from reference_codec import PickleCodec
from strategies import SemanticRegistry, from_struct, untyped_values


class GenerateRequest(msgspec.Struct, array_like=True):
    request_id: str
    prompt_token_ids: List[int]
    max_new_tokens: int = 16
    params: Dict[str, Any] = {}


class GenerateChunk(msgspec.Struct, array_like=True):
    request_id: str
    token_ids: List[int]
    logprobs: Optional[List[float]] = None
    finished: bool = False


class MsgspecCodec:
    """The gateway's codec: plain msgspec, one decoder per socket type."""

    name = "gateway-msgspec"
    wire_compatible = True
    typed_decode = True

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder()
        self._decoders: Dict[type, msgspec.msgpack.Decoder] = {}

    def encode(self, msg: Any) -> List[bytes]:
        return [self._encoder.encode(msg)]

    def decode(self, frames, msg_type: type) -> Any:
        if len(frames) != 1:
            raise msgspec.DecodeError(f"expected one frame, got {len(frames)}")
        decoder = self._decoders.get(msg_type) or self._decoders.setdefault(msg_type, msgspec.msgpack.Decoder(msg_type))
        try:
            return decoder.decode(frames[0])
        except RecursionError:  # msgspec's own answer to deep nesting in an Any field; a receiver must not die of it
            raise msgspec.DecodeError("message nested too deeply") from None


_REGISTRY = SemanticRegistry()


@_REGISTRY.register("logprobs")
def _logprobs(ctx):
    """One log-probability per generated token, each at most 0."""
    return st.one_of(st.none(), st.lists(st.floats(max_value=0.0, allow_nan=False), min_size=len(ctx.values["token_ids"]),
                                         max_size=len(ctx.values["token_ids"])))


_JSON = untyped_values(json_like=True, enums=())


def _message_strategy(cls: type):
    return from_struct(cls, registry=_REGISTRY, untyped=_JSON)


ENGINE = Engine(
    name="gateway",
    description="an in-house gateway's generate stream (example)",
    message_types=lambda: {"GenerateRequest": GenerateRequest, "GenerateChunk": GenerateChunk},
    message_strategy=_message_strategy,
    codecs={"msgspec": MsgspecCodec, "pickle": PickleCodec},
    pickle_baseline=PickleCodec,
    typed_frames=True,
    wire_reference=lambda out_of_band: MsgspecCodec(),
)
