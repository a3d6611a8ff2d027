"""SGLang's message families, resolvable in any release with msgpack IPC (0.5.15 on): what the schema snapshots record.

* ``io``: the tagged IPC messages of ``sglang.srt.managers.io_struct``, every
  string-tagged ``msgspec.Struct`` that derives from a tagged base
  (``BaseReq``, ``BaseBatchReq``), discovered; ext codes from SGLang's codec
  module (``_MSGPACK_EXT_*``).
* ``kv-events``: ``KVEventBatch`` of ``sglang.srt.disaggregation.kv_events``,
  published to external routers whether or not the IPC uses pickle.

Nothing here imports SGLang until a family's ``roots`` is called.
"""

from __future__ import annotations

import importlib
from typing import Any, List, Mapping

from conformance.engines.profile import MessageFamily

from .installed import CODEC_MODULES, IO_MODULE, ext_codes, message_types

__all__ = ["FAMILIES", "IO_MODULE", "KV_EVENTS_MODULE", "CODEC_MODULES"]

KV_EVENTS_MODULE = "sglang.srt.disaggregation.kv_events"


def _io() -> Mapping[str, type]:
    return message_types()


def _io_ext() -> Mapping[int, str]:
    return ext_codes()


class _IoCodec:
    """SGLang's own ``msgpack_encode``/``msgpack_decode`` of the release (``io_struct``): one frame, the tag says the type."""

    def __init__(self) -> None:
        self._io = importlib.import_module(IO_MODULE)

    def encode(self, obj: Any) -> List[bytes]:
        return [bytes(self._io.msgpack_encode(obj))]

    def decode(self, frames: List[bytes], cls: type) -> Any:
        return self._io.msgpack_decode(frames[0])


def _kv_events() -> Mapping[str, type]:
    module = importlib.import_module(KV_EVENTS_MODULE)
    return {"KVEventBatch": module.KVEventBatch}


FAMILIES = (
    MessageFamily(name="io", description="tagged IPC messages between SGLang's processes (sglang.srt.managers.io_struct)", roots=_io, framing="tagged", ext_types=_io_ext, codec=_IoCodec),
    MessageFamily(
        name="kv-events",
        description="KV-cache events published to external routers (sglang.srt.disaggregation.kv_events)",
        roots=_kv_events,
        framing="typed",
    ),
)
