"""vLLM's own codecs with one realistic break per message type of every family beyond the engine core (the meta-test's codec).

Each break is what a peer that fell behind, or a hand-written port, sends:
a KV event's tag misspelled, a handshake field dropped, a coordinator
tuple's order swapped, a bool sent as an int, an enum sent by name, a field
renamed. The frame is vLLM's own; the break rewrites its body (decoded
untyped, changed, encoded again), so vLLM's own decoder reads it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import msgspec

from conformance.engines.vllm.codec import VllmCodec


def _drop(key: str) -> Callable[[Any], Any]:
    def change(body: Dict[str, Any]) -> Any:
        return {k: v for k, v in body.items() if k != key}

    return change


def _rename(old: str, new: str) -> Callable[[Any], Any]:
    def change(body: Dict[str, Any]) -> Any:
        return {(new if k == old else k): v for k, v in body.items()}

    return change


def _set(key: str, make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def change(body: Dict[str, Any]) -> Any:
        return {**body, key: make(body.get(key))}

    return change


def _misspell_event_tags(batch: List[Any]) -> Any:
    ts, events, *rest = batch
    return [ts, [{**e, "type": e["type"][:-1]} if isinstance(e, dict) else e for e in events], *rest]


def _swap_first_two(items: List[Any]) -> Any:
    return [items[1], items[0], *items[2:]]


#: Message type -> the change made to its body (all map-encoded but the batch and the coordinator's tuples).
BREAKS: Dict[str, Callable[[Any], Any]] = {
    "KVEventBatch": _misspell_event_tags,
    "EngineCoreReadyResponse": _drop("instance_id"),
    "EngineHandshakeMetadata": _drop("parallel_config"),
    "ExternalElasticEPScaleUpHandshakeMetadata": _drop("num_redundant_experts"),
    "CoordinatorStats": _swap_first_two,
    "StartDpWave": lambda items: items[:1],
    "ScaleElasticEp": lambda items: [items[0], str(items[1])],
    "FaultToleranceRequest": _drop("instruction"),
    "FaultToleranceResult": _set("success", int),
    "KvHintAction": _drop("action_version"),
    "KvHintsEnvelope": _rename("message_id", "messageId"),
    "XferReq": _drop("mm_hash"),
    "XferAck": _set("status", lambda status: f"STATUS_{status}"),
    "MooncakeXferMetadata": _set("remote_port", str),
    "MooncakeXferResponse": _set("status", lambda status: f"STATUS_{status}"),
    # Silent: a renamed field is skipped and the heartbeat reads as "no transfer ids".
    "MooncakeLeaseHeartbeat": _rename("lease_transfer_ids", "lease_ids"),
    "MoRIIOAgentMetadata": _set("agent_metadata", lambda raw: raw.hex() if isinstance(raw, bytes) else raw),
    "NixlAgentMetadata": _drop("block_lens"),
    "NixlHandshakePayload": _rename("compatibility_hash", "compat_hash"),
}


class EveryFamilyBroken(VllmCodec):
    """:class:`VllmCodec`, with the body of every message type in :data:`BREAKS` rewritten on encode."""

    name = "vllm-every-family-broken"
    wire_compatible = False  # its bytes are not vLLM's wire: the producer/consumer properties leave it out

    def encode(self, msg: Any) -> List[Any]:
        frames = super().encode(msg)
        change = BREAKS.get(type(msg).__name__)
        if change is None:
            return frames
        body = msgspec.msgpack.decode(bytes(frames[0]))
        return [msgspec.msgpack.encode(change(body)), *frames[1:]]


class DeniesUnknownKeys(VllmCodec):
    """:class:`VllmCodec` reading map messages as a serde port with ``deny_unknown_fields`` does: a key it does not know is refused."""

    name = "vllm-denies-unknown-keys"

    def decode(self, frames, msg_type: type) -> Any:
        body = msgspec.msgpack.decode(bytes(frames[0])) if frames else None
        if isinstance(body, dict):
            info = msgspec.inspect.type_info(msg_type)
            known = {f.encode_name for f in info.fields} | {getattr(info, "tag_field", None)}
            unknown = sorted(set(body) - known)
            if unknown:
                raise msgspec.ValidationError(f"unknown field {unknown[0]!r}")
        return super().decode(frames, msg_type)


class DefaultsNotFilled(VllmCodec):
    """:class:`VllmCodec` whose decoder leaves a field the sender did not send at the type's zero value, not the declared default (a hand-written port's ``Default``)."""

    name = "vllm-defaults-not-filled"

    _ZERO = {int: 0, str: "", bool: False, float: 0.0}

    def decode(self, frames, msg_type: type) -> Any:
        obj = super().decode(frames, msg_type)
        body = msgspec.msgpack.decode(bytes(frames[0])) if frames else None
        if not isinstance(body, dict) or not isinstance(obj, msgspec.Struct):
            return obj
        changes = {}
        for field in msgspec.structs.fields(obj):
            if field.encode_name not in body and type(field.default) in self._ZERO and field.default != self._ZERO[type(field.default)]:
                changes[field.name] = self._ZERO[type(field.default)]
        return msgspec.structs.replace(obj, **changes) if changes else obj


class SecondHopLosesLastField(VllmCodec):
    """:class:`VllmCodec` whose re-encode of a message it decoded sends the last field at its default (SGLang #31339: a router loses a field on the second hop).

    A message built by the sender is sent as is; one this codec decoded (a
    router's) goes out with its last defaulted field reset. Only a second hop
    shows it, as in production.
    """

    name = "vllm-second-hop-loses-last-field"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._decoded: List[Any] = []  # what this codec decoded (kept alive, so ids stay unique)

    def decode(self, frames, msg_type: type) -> Any:
        obj = super().decode(frames, msg_type)
        self._decoded.append(obj)
        return obj

    def encode(self, msg: Any) -> List[Any]:
        if isinstance(msg, msgspec.Struct) and any(obj is msg for obj in self._decoded):
            last = msgspec.structs.fields(msg)[-1]
            if last.default is not msgspec.NODEFAULT:
                msg = msgspec.structs.replace(msg, **{last.name: last.default})
        return super().encode(msg)
