"""Roots of the message hierarchy and the opaque pickle carrier.

Every IPC message derives from :class:`BaseReq` (one request) or
:class:`BaseBatchReq` (parallel per-request arrays). Both are tagged,
positional (``array_like``) msgspec structs: on the wire a message is a
msgpack array whose first element is the class name and whose remaining
elements are the fields in declaration order, base-class fields first. This
is the layout SGLang 0.5.23 uses, so the names, order, types and defaults
below must match it exactly; a field may only ever be appended at the tail.
"""

from __future__ import annotations

from typing import ClassVar, List, Optional

import msgspec

__all__ = ["BaseReq", "BaseBatchReq", "PickleWrapper"]


class BaseReq(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    """Base for single-request IPC payloads."""

    rid: Optional[str] = None
    http_worker_ipc: Optional[str] = None


class BaseBatchReq(msgspec.Struct, tag=True, kw_only=True, array_like=True):
    """Base for batched IPC payloads whose items are parallel arrays."""

    rids: Optional[List[str]] = None
    http_worker_ipcs: Optional[List[Optional[str]]] = None


class PickleWrapper(msgspec.Struct, tag=True, array_like=True):
    """Opaque pickle bytes, as SGLang 0.5.23 sends ``time_stats`` and ``customized_info``.

    The reference schema gives those fields concrete types, but still accepts
    this carrier in them so that it can read what SGLang writes. The reference
    codec never unpickles ``data`` unless it was built with
    ``allow_pickle=True``; otherwise decoding a message that carries one raises
    :class:`reference_codec.DecodeError`.

    ``pickle_carrier`` (a class variable, not a field) says so to generic code:
    the strategies draw it only when asked (``pickle_wrappers=True``), and the
    schema-evolution property does not treat it as a schema.
    """

    pickle_carrier: ClassVar[bool] = True
    data: bytes
