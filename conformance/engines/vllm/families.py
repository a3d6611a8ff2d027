"""vLLM's message families, resolvable in any release from 0.23.0 on (the schema snapshots and the release history read them).

* ``engine-core``: every ``msgspec.Struct`` defined in ``vllm.v1.engine``
  (``EngineCoreRequest``, ``EngineCoreOutputs``, ``UtilityOutput``, ...), one
  type per socket; ext codes from ``vllm.v1.serial_utils``
  (``CUSTOM_TYPE_*``).
* ``kv-events``: ``KVEventBatch`` of ``vllm.distributed.kv_events``, published
  over ZeroMQ to routers outside vLLM (NVIDIA Dynamo decodes it in Rust,
  llm-d in Go); its events are a tagged union. Written with a plain
  ``msgspec.msgpack.Encoder``: no ext codes.

Nothing here imports vLLM until a family's ``roots`` is called.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Mapping

from conformance.engines.profile import MessageFamily

__all__ = ["FAMILIES", "ENGINE_CORE_MODULE", "KV_EVENTS_MODULE"]

ENGINE_CORE_MODULE = "vllm.v1.engine"
KV_EVENTS_MODULE = "vllm.distributed.kv_events"


def _structs_defined_in(name: str) -> Dict[str, type]:
    import msgspec

    module = importlib.import_module(name)
    return {
        attr: obj
        for attr, obj in sorted(vars(module).items())
        if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == name
    }


def _engine_core() -> Mapping[str, type]:
    return _structs_defined_in(ENGINE_CORE_MODULE)


def _engine_core_ext() -> Mapping[int, str]:
    module = importlib.import_module("vllm.v1.serial_utils")
    return {value: name for name, value in vars(module).items() if name.startswith("CUSTOM_TYPE_") and isinstance(value, int)}


class _EngineCoreCodec:
    """vLLM's own ``MsgpackEncoder``/``MsgpackDecoder`` of the release (``vllm.v1.serial_utils``)."""

    def __init__(self) -> None:
        self._serial = importlib.import_module("vllm.v1.serial_utils")
        self._encoder = self._serial.MsgpackEncoder()
        self._decoders: Dict[type, Any] = {}

    def encode(self, obj: Any) -> List[bytes]:
        return [bytes(frame) for frame in self._encoder.encode(obj)]

    def decode(self, frames: List[bytes], cls: type) -> Any:
        decoder = self._decoders.get(cls)
        if decoder is None:
            decoder = self._decoders[cls] = self._serial.MsgpackDecoder(cls)
        return decoder.decode(frames)


def _kv_events() -> Mapping[str, type]:
    module = importlib.import_module(KV_EVENTS_MODULE)
    return {"KVEventBatch": module.KVEventBatch}


FAMILIES = (
    MessageFamily(
        name="engine-core",
        description="engine-core requests, outputs and utility calls (vllm.v1.engine), one type per socket",
        roots=_engine_core,
        framing="typed",
        ext_types=_engine_core_ext,
        codec=_EngineCoreCodec,
    ),
    MessageFamily(
        name="kv-events",
        description="KV-cache events published to external routers (vllm.distributed.kv_events)",
        roots=_kv_events,
        framing="typed",
    ),
)
