"""The reference wire schema of every SGLang IPC message (the release in :data:`SCHEMA_VERSION`).

``MESSAGE_TYPES`` maps each wire tag (the class name, first element of the
positional array) to its class. It is built by walking the subclasses of
:class:`BaseReq` and :class:`BaseBatchReq` to any depth, so a grandchild
class can never be missing from the decoder's union (a bug SGLang's own
``__subclasses__()`` scan has). Importing this package fails loudly if two
classes share a tag.

To add a message: declare it in :mod:`.generation` or :mod:`.control` deriving
from ``BaseReq``/``BaseBatchReq``; it is picked up here, by the codec, by the
strategies and by the conformance suite. Append new fields at the tail only:
the encoding is positional. Then run ``python -m conformance.engines.sglang.sync``
(with the SGLang release installed): it refreshes the fields snapshot the
tests compare against and says what else the reference lacks.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Dict, Iterator, List, Mapping, Set, Tuple, Type, TypeVar, cast

import msgspec

from . import common, control, generation
from ._base import BaseBatchReq, BaseReq, PickleWrapper
from .common import *  # noqa: F401,F403 - re-exported schema surface
from .control import *  # noqa: F401,F403
from .generation import *  # noqa: F401,F403
from .generation import BatchReqTimeStats
from .scalars import INT64_MAX, INT64_MIN, UINT64_MAX, Int64, Int128, UInt64

__all__ = [
    "ENGINE",
    "SCHEMA_VERSION",
    "BaseReq",
    "BaseBatchReq",
    "PickleWrapper",
    "BatchReqTimeStats",
    "Int64",
    "UInt64",
    "Int128",
    "INT64_MIN",
    "INT64_MAX",
    "UINT64_MAX",
    "MESSAGE_TYPES",
    "NESTED_TYPES",
    "ENUM_TYPES",
    "OPAQUE_FIELDS",
    "DOCUMENTED_DIFFERENCES",
    "iter_subclasses",
    "wire_tag",
]


#: The engine and release whose IPC messages this schema mirrors.
ENGINE = "sglang"
SCHEMA_VERSION = "0.5.23"


_T = TypeVar("_T")


def iter_subclasses(root: Type[_T]) -> Iterator[Type[_T]]:
    """Yield every subclass of ``root`` at any depth, depth first, each once."""
    seen: Set[Type[_T]] = set()
    stack: List[Type[_T]] = list(reversed(root.__subclasses__()))
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        yield cls
        stack.extend(reversed(cls.__subclasses__()))


def wire_tag(cls: type) -> str:
    """The tag a tagged struct class writes as its first array element."""
    tag = cast(msgspec.inspect.StructType, msgspec.inspect.type_info(cls)).tag
    if not isinstance(tag, str):
        raise TypeError(f"{cls.__qualname__} is not a string-tagged struct")
    return tag


def _build_message_types() -> Mapping[str, Type[msgspec.Struct]]:
    table: Dict[str, Type[msgspec.Struct]] = {}
    for root in (BaseReq, BaseBatchReq):
        for cls in iter_subclasses(root):
            # Only classes of this schema: a plug-in's own subclasses of our
            # bases must not silently join the reference wire.
            if not cls.__module__.startswith(__name__):
                continue
            tag = wire_tag(cls)
            if tag in table and table[tag] is not cls:
                raise TypeError(f"duplicate wire tag {tag!r}: {table[tag].__qualname__} and {cls.__qualname__}")
            table[tag] = cls
    return MappingProxyType(dict(sorted(table.items())))


#: Wire tag -> message class, for every IPC message of the schema.
MESSAGE_TYPES: Mapping[str, Type[msgspec.Struct]] = _build_message_types()

# Annotated in .common, whose star import already bound both names here.
NESTED_TYPES = common.NESTED_TYPES + (BatchReqTimeStats, PickleWrapper)
ENUM_TYPES = common.ENUM_TYPES

#: Fields where SGLang 0.5.23 sends a ``PickleWrapper``; the only places the
#: reference codec will ever unpickle, and only with ``allow_pickle=True``.
OPAQUE_FIELDS: Mapping[type, Tuple[str, ...]] = MappingProxyType(
    {
        cls: tuple(f for f in ("time_stats", "customized_info") if f in cls.__struct_fields__)
        for cls in MESSAGE_TYPES.values()
        if {"time_stats", "customized_info"} & set(cls.__struct_fields__)
    }
)

_UNSIGNED = "an unsigned 64-bit value (UInt64): a negative one is refused, values up to 2**64-1 fit; SGLang declares a plain int"

#: Where the reference schema deliberately differs from SGLang's, ``(struct, field) -> reason``. The
#: recursive schema diff from SGLang to the reference finds these and nothing else (tested where SGLang
#: is installed); ``python -m conformance.engines.sglang.sync`` leaves them out of what it asks to change.
DOCUMENTED_DIFFERENCES: Mapping[Tuple[str, str], str] = MappingProxyType(
    {
        ("TokenizedGenerateReqInput", "bootstrap_room"): _UNSIGNED,
        ("MultimodalDataItem", "hash"): _UNSIGNED,
        ("ExpertWeightPointer", "weight_ptr"): _UNSIGNED,
        ("LoRARef", "lora_id"): (
            "required: SGLang's default is a fresh uuid4 per instance, so a LoRARef sent without it "
            "would decode to another id on every hop"
        ),
        **{
            (cls.__name__, name): (
                "a concrete struct (or dict) instead of SGLang's pickled PickleWrapper, which the reference "
                "refuses unless the codec is built with allow_pickle=True"
            )
            for cls, names in OPAQUE_FIELDS.items()
            for name in names
        },
    }
)

__all__ += list(common.__all__) + [cls.__name__ for cls in MESSAGE_TYPES.values()] + [
    "LoadLoRAAdapterReqOutput",
    "UnloadLoRAAdapterReqOutput",
    "LoadLoRAAdapterFromTensorsReqOutput",
]

del common, control, generation
