"""vLLM's message families: every message that crosses one of its process or machine boundaries, found in the release's own modules.

Each family's roots are read off the release when called (nothing here
imports vLLM before), so the same declaration serves vLLM 0.34.0's suite
and the snapshot of any older release (a family whose modules a release
lacks raises ``ImportError``: absent there).

* ``engine-core``: every ``msgspec.Struct`` ``vllm.v1.engine`` defines
  (``EngineCoreRequest``, ``EngineCoreOutputs``, ``UtilityOutput``, ...),
  one type per socket, through vLLM's ``MsgpackEncoder``/``MsgpackDecoder``
  (ext codes ``CUSTOM_TYPE_*`` of ``vllm.v1.serial_utils``).
* ``handshake``: what the engine core and its front end decode with plain
  msgspec and an explicit type at startup (``EngineCoreReadyResponse``,
  ``EngineHandshakeMetadata``, the elastic-EP scale-up metadata): the
  messages vLLM's Rust front end must keep up with.
* ``dp-coordinator``: the data-parallel coordinator's tuples
  (:mod:`.coordinator`: vLLM has no class for them).
* ``kv-events``: ``KVEventBatch`` (``vllm.distributed.kv_events``),
  published to routers outside vLLM; a plain msgspec encoder, events a
  tagged union. The offloading connector's wire is this family too (its
  ``BlockStored`` carry ``medium``); its ``_OffloadEventMetadata`` is an
  in-memory snapshot that is never encoded.
* ``fault-tolerance``: the structs of ``vllm.v1.fault_tolerance.utils``,
  sent as a utility call's argument and result (engine-core codec).
* ``kv-hints``: the structs of ``vllm.v1.kv_hints.protocol``, carried in
  ``EngineCoreRequest.kv_hints`` (engine-core codec).
* ``ec-transfer``, ``mooncake``, ``moriio``, ``nixl``: the side channels
  between machines in disaggregated serving; each family is what the
  connector's own code decodes with plain msgspec and an explicit type
  (:func:`conformance.engines.discovery.decoded_types`), so a message a
  connector adds is in the family without an edit here.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Mapping

from conformance.engines.discovery import classes_defined_in, decoded_types
from conformance.engines.profile import FamilyNotInRelease, MessageFamily

#: The distribution (and top-level package) whose modules hold the families.
PACKAGE = "vllm"

__all__ = ["FAMILIES", "ENGINE_CORE_MODULE", "KV_EVENTS_MODULE", "family_of", "on_engine_core_codec", "all_roots"]

ENGINE_CORE_MODULE = "vllm.v1.engine"
KV_EVENTS_MODULE = "vllm.distributed.kv_events"
_CONNECTORS = "vllm.distributed.kv_transfer.kv_connector.v1"


def _engine_core() -> Mapping[str, type]:
    import msgspec

    return {name: cls for name, cls in classes_defined_in(ENGINE_CORE_MODULE).items() if issubclass(cls, msgspec.Struct)}


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


def _handshake() -> Mapping[str, type]:
    return decoded_types(["vllm.v1.engine.core", "vllm.v1.engine.core_client", "vllm.v1.engine.utils"])


def _dp_coordinator() -> Mapping[str, type]:
    from .coordinator import messages_in_release

    found, missing = messages_in_release()
    if not found:
        # The shapes are declared, not found: recording them for a release that builds other tuples would hide a change.
        raise FamilyNotInRelease("the coordinator's tuples have no class in vLLM, and this release's source builds none as declared: " + "; ".join(missing))
    return found


def _unpacking_codec() -> Any:
    from .coordinator import UnpackingCodec

    return UnpackingCodec()


def _kv_events() -> Mapping[str, type]:
    module = importlib.import_module(KV_EVENTS_MODULE)
    return {"KVEventBatch": module.KVEventBatch}


def _fault_tolerance() -> Mapping[str, type]:
    return classes_defined_in("vllm.v1.fault_tolerance.utils")


def _kv_hints() -> Mapping[str, type]:
    return classes_defined_in("vllm.v1.kv_hints.protocol")


def _ec_transfer() -> Mapping[str, type]:
    base = "vllm.distributed.ec_transfer.ec_connector.cpu"
    return decoded_types([f"{base}.session", f"{base}.utils"])


def _connector(module: str):
    def roots() -> Mapping[str, type]:
        return decoded_types([f"{_CONNECTORS}.{module}"])

    return roots


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
        name="handshake",
        description="engine-core startup handshake (ready response, handshake metadata), plain msgspec with the declared type",
        roots=_handshake,
        framing="typed",
    ),
    MessageFamily(
        name="dp-coordinator",
        description="data-parallel coordinator's stats, wave and scale messages: plain tuples, unpacked by position",
        roots=_dp_coordinator,
        framing="typed",
        codec=_unpacking_codec,
    ),
    MessageFamily(
        name="kv-events",
        description="KV-cache events published to external routers (vllm.distributed.kv_events)",
        roots=_kv_events,
        framing="typed",
    ),
    MessageFamily(
        name="fault-tolerance",
        description="fault-tolerance commands and results, a utility call's argument and result (engine-core codec)",
        roots=_fault_tolerance,
        framing="typed",
        ext_types=_engine_core_ext,
        codec=_EngineCoreCodec,
    ),
    MessageFamily(
        name="kv-hints",
        description="orchestrator KV hints carried in EngineCoreRequest.kv_hints (engine-core codec)",
        roots=_kv_hints,
        framing="typed",
        ext_types=_engine_core_ext,
        codec=_EngineCoreCodec,
    ),
    MessageFamily(
        name="ec-transfer",
        description="encoder-cache transfer requests and acknowledgements between machines (ec_connector.cpu)",
        roots=_ec_transfer,
        framing="typed",
    ),
    MessageFamily(
        name="mooncake",
        description="Mooncake KV connector's side channel: transfer metadata, responses, lease heartbeats",
        roots=_connector("mooncake.mooncake_connector"),
        framing="typed",
        # The prefill side's socket: a frame is tried as a heartbeat first and
        # is a pull when it has no transfer ids ("a pull decodes as a heartbeat
        # with no transfer ids, because msgspec skips the fields it does not know").
        channels={"prefill side channel": ("MooncakeLeaseHeartbeat", "MooncakeXferMetadata")},
    ),
    MessageFamily(
        name="moriio",
        description="MoRIIO KV connector's agent metadata exchanged between machines",
        roots=_connector("moriio.moriio_connector"),
        framing="typed",
    ),
    MessageFamily(
        name="nixl",
        description="NIXL KV connector's handshake payload and agent metadata exchanged between machines",
        roots=_connector("nixl.base_worker"),
        framing="typed",
    ),
)


def family_of(name: str) -> MessageFamily:
    """The family called ``name``; ``KeyError`` naming the families otherwise."""
    for family in FAMILIES:
        if family.name == name:
            return family
    raise KeyError(f"vLLM has no family {name!r}: {', '.join(f.name for f in FAMILIES)}")


def on_engine_core_codec(family: MessageFamily) -> bool:
    """Whether the family travels through vLLM's engine-core ``MsgpackEncoder``/``MsgpackDecoder`` (its ext codes, its out-of-band frames)."""
    return family.codec is _EngineCoreCodec


def all_roots() -> Mapping[str, type]:
    """Every family's roots, ``name -> class``, those the installed release has; ``ImportError`` naming a family whose modules need a package not installed."""
    from conformance.engines.profile import family_roots

    try:
        by_family, _ = family_roots(FAMILIES, PACKAGE, PACKAGE)  # a family the release lacks is left out; the run's header names it
    except ImportError as exc:
        raise ImportError(f"{exc}; `tox -e vllm` installs what it needs (constraints/vllm-nodeps.txt)") from exc
    found: Dict[str, type] = {}
    for roots in by_family.values():
        for name, cls in roots.items():
            if found.setdefault(name, cls) is not cls:
                raise ImportError(f"two vLLM message types are called {name!r}: {found[name]!r} and {cls!r}")
    return found
