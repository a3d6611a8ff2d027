"""SGLang's own msgpack codec driven with the reference schema's messages: for what compares the two on the reference's corpus.

The gate (``--codec sglang``) tests SGLang's codec on SGLang's own classes
(:mod:`.codec`); this adapter is for the tools that start from reference
messages instead: the benchmarks' corpus (:mod:`.bench`), the byte-for-byte
comparison of the reference and SGLang (``reference_codec/tests/test_sglang_compat.py``)
and the live check's reference IPC. It converts by class and field name, so it
works where the installed SGLang's classes have the reference's fields (the
release the schema mirrors, :data:`reference_codec.schema.SCHEMA_VERSION`);
elsewhere a conversion fails with the class SGLang refuses.

``ReferenceAdapter.encode`` converts a reference message into SGLang's class of the
same name (recursively: nested structs by name, enums by member name), does
what SGLang's senders do to opaque fields (``wrap_as_pickle`` on
``time_stats`` and ``customized_info``), and calls SGLang's
``msgpack_encode``. ``decode`` calls ``msgpack_decode``, unwraps opaque fields
as SGLang's receivers do (``pickle.loads``), and converts back to the
reference classes. The conversion changes no value: containers, tensors,
arrays and scalars pass through untouched, so every difference the suite
finds is SGLang's codec (or its struct hooks such as ``__post_init__``).
"""

from __future__ import annotations

import enum
import functools
import importlib
import pickle
from typing import Any, Dict, List, Optional, Type, cast

import msgspec

from reference_codec import schema as ref

from .installed import installed_release, io_struct, msgpack_io

__all__ = ["ReferenceAdapter", "sglang_available", "reference_mismatch"]

# Modules whose namespaces hold the SGLang classes that reference classes mirror.
_SGLANG_MODULES = (
    "sglang.srt.managers.io_struct",
    "sglang.srt.managers.schedule_batch",
    "sglang.srt.multimodal.modality",
    "sglang.srt.utils.weight_versions",
    "sglang.srt.managers.kv_hints",
    "sglang.srt.sampling.watermarking.core",
    "sglang.srt.sampling.sampling_mask",
    "sglang.srt.beam_search.types",
    "sglang.srt.lora.lora_registry",
    "sglang.srt.managers.embed_types",
)
_OPAQUE = ("time_stats", "customized_info")


def sglang_available() -> bool:
    try:
        io_struct()
    except Exception:
        return False
    return True


@functools.lru_cache(maxsize=None)
def reference_mismatch() -> Optional[str]:
    """Why the installed SGLang's classes are not the reference schema's (a difference positional decoding does not follow and the schema does not document), or None: they are."""
    from conformance.schema_diff import diff_schemas

    from .installed import message_types
    from .sync import documented

    undocumented = [c for c in diff_schemas(message_types(), ref.MESSAGE_TYPES) if c.breaks("backward") and not documented(c)]
    if not undocumented:
        return None
    return f"the installed SGLang {installed_release() or '?'} differs from the reference schema ({ref.SCHEMA_VERSION}) in {len(undocumented)} place(s), first {undocumented[0]}"


def _reference_classes() -> Dict[str, type]:
    table = {cls.__name__: cls for cls in ref.MESSAGE_TYPES.values()}
    for cls in ref.NESTED_TYPES + ref.ENUM_TYPES:
        table[cls.__name__] = cls
    return table


class ReferenceAdapter:
    """The installed SGLang's ``msgpack_encode``/``msgpack_decode`` behind the codec interface, on reference messages."""

    name = "sglang"
    wire_compatible = True
    out_of_band = False

    def __init__(self) -> None:
        self._io = msgpack_io()
        self._theirs: Dict[str, type] = {}
        for module_name in _SGLANG_MODULES:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if not (exc.name or "").startswith("sglang"):
                    raise
                continue  # a release without that module: its classes are missing, and converting to them fails by name
            for name, obj in vars(module).items():
                if isinstance(obj, type) and (issubclass(obj, (msgspec.Struct, enum.Enum))):
                    self._theirs.setdefault(name, obj)
        self._ours = _reference_classes()
        #: SGLang's own message classes by tag, for the schema-diff property.
        self.message_types = {
            name: cls
            for name, cls in self._theirs.items()
            if name in ref.MESSAGE_TYPES and issubclass(cls, (self._io.BaseReq, self._io.BaseBatchReq))
        }

    #: SGLang raises ``msgspec.DecodeError`` for what it detects; anything else
    #: escaping ``decode`` on bad input is a finding of the bad-input property.
    decode_error = msgspec.DecodeError

    def __repr__(self) -> str:
        return f"ReferenceAdapter(sglang {installed_release() or '?'})"

    # --- conversion ---------------------------------------------------------

    def to_sglang(self, value: Any) -> Any:
        """A reference value rebuilt with SGLang's classes (structs and enums by name)."""
        return self._convert(value, self._theirs, to_sglang=True)

    def to_reference(self, value: Any) -> Any:
        """An SGLang value rebuilt with the reference classes."""
        return self._convert(value, self._ours, to_sglang=False)

    def _convert(self, value: Any, table: Dict[str, type], to_sglang: bool) -> Any:
        t = type(value)
        if isinstance(value, msgspec.Struct):
            target = table.get(t.__name__)
            if target is None:
                return value  # a reference-only struct (time stats) travels pickled, as itself
            kwargs = {}
            for field in value.__struct_fields__:
                item = getattr(value, field)
                if field in _OPAQUE and to_sglang and item is not None and not isinstance(item, ref.PickleWrapper):
                    kwargs[field] = self._io.wrap_as_pickle(item)
                elif field in _OPAQUE and not to_sglang and item is not None and type(item).__name__ == "PickleWrapper":
                    kwargs[field] = pickle.loads(item.data)  # what SGLang's receivers do
                else:
                    kwargs[field] = self._convert(item, table, to_sglang)
            return target(**kwargs)
        if isinstance(value, enum.Enum):
            # The table maps names to classes of any kind; this name is an enum's on both sides.
            enum_cls = cast(Optional[Type[enum.Enum]], table.get(t.__name__))
            return enum_cls[value.name] if enum_cls is not None else value
        if t is list:
            return [self._convert(v, table, to_sglang) for v in value]
        if t is tuple:
            return tuple(self._convert(v, table, to_sglang) for v in value)
        if t is dict:
            return {self._convert(k, table, to_sglang): self._convert(v, table, to_sglang) for k, v in value.items()}
        if t is set:
            return {self._convert(v, table, to_sglang) for v in value}
        return value

    def as_held(self, msg: Any) -> Any:
        """``msg`` as SGLang holds it: built with SGLang's classes, then converted back, without the wire.

        SGLang's constructors normalise (``SamplingParams(temperature=0.0)``
        becomes ``temperature=1.0, top_k=1``; ``AbortReq(rid=None)`` gets
        ``rid=""``) and validate (watermark settings): an SGLang sender can
        only ever hold the result, so that is what the suite sends and
        expects back. A message the constructors refuse raises here and is
        not drawn. A normalisation that happens only on decode still fails.
        """
        return self.to_reference(self.to_sglang(msg))

    # --- codec interface ----------------------------------------------------

    def encode(self, msg: Any) -> List[bytes]:
        return [self._io.msgpack_encode(self.to_sglang(msg))]

    def decode(self, frames: Any) -> Any:
        if isinstance(frames, (bytes, bytearray, memoryview)):
            frames = [frames]
        if len(frames) != 1:
            raise msgspec.DecodeError(f"SGLang's codec reads exactly one frame, got {len(frames)}")
        return self.to_reference(self._io.msgpack_decode(bytes(frames[0])))


