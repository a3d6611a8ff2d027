"""Property 8: a tensor sent from a device the receiver lacks is refused, or placed where the codec declares; never moved silently.

Pickle refuses such a frame on a machine without that device; a codec that
quietly decodes a ``cuda:0`` tensor as a CPU tensor hands the receiver data on
the wrong device with no error (the migration's "tensor device dropped").
The property needs no GPU: it draws a message with tensors, writes it with
the engine's wire reference (wire v1), rewrites each tensor's device text to a
CUDA device this process does not have, and decodes that with the codec.

* A codec that declares no ``map_location`` must raise its declared decode error.
* A codec that declares ``map_location = "cpu"`` (say) must decode every
  tensor onto that device, values, dtype and shape intact.

Only codecs that declare wire compatibility read the reference's bytes; for
the others the device text of their own wire is theirs to keep (vLLM's does
not record it and declares that tensors arrive on the CPU).
"""

from __future__ import annotations

import struct
from typing import Any, Tuple

import msgspec
import pytest
import torch
from hypothesis import assume, event, given
from hypothesis import strategies as st

from conformance.findings import Finding
from conformance.properties import ENGINE, MESSAGE_TYPES, PropertyFailure, check_equivalent, draw_message, reference_frames, without_dtypes
from reference_codec import ReferenceCodec, type_tree
from reference_codec.wire import EXT_TORCH_TENSOR

REFERENCE = ENGINE.wire_reference(False) if ENGINE.wire_reference is not None else None


def _carries_tensor(cls: type) -> bool:
    """Whether a message of class ``cls`` can hold a declared ``torch.Tensor`` anywhere, nested structs included."""
    return any(isinstance(t, msgspec.inspect.CustomType) and issubclass(t.cls, torch.Tensor) for _, t in type_tree.walk(type_tree.type_info(cls)))


TENSOR_TAGS = sorted(tag for tag, cls in MESSAGE_TYPES.items() if _carries_tensor(cls))


def absent_cuda_index() -> int:
    """The first CUDA index this process does not have (0 on a machine without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def from_device(body: bytes, device: str) -> Tuple[bytes, int]:
    """``body`` (one wire v1 frame) with the device text of every tensor set to ``device``, and how many there were."""
    count = 0

    def walk(value: Any) -> Any:
        nonlocal count
        if isinstance(value, msgspec.msgpack.Ext):
            if value.code != EXT_TORCH_TENSOR:
                return value
            payload = bytes(value.data)
            (n,) = struct.unpack_from(">I", payload)
            meta = msgspec.msgpack.decode(payload[4 : 4 + n])
            meta[2] = device
            packed = msgspec.msgpack.encode(meta)
            count += 1
            return msgspec.msgpack.Ext(value.code, struct.pack(">I", len(packed)) + packed + payload[4 + n :])
        if type(value) is list:
            return [walk(v) for v in value]
        if type(value) is dict:
            return {walk(k): walk(v) for k, v in value.items()}
        return value

    rewritten = walk(msgspec.msgpack.decode(body))
    return msgspec.msgpack.encode(rewritten), count


def _devices_found(value: Any) -> set:
    from reference_codec.paths import locate

    found: set = set()

    def note(v: Any) -> bool:
        if isinstance(v, torch.Tensor):
            found.add(str(v.device))
        return False

    locate(value, note, limit=1 << 30)
    return found


@pytest.mark.parametrize("tag", TENSOR_TAGS)
@given(data=st.data())
def test_a_tensor_from_a_device_the_receiver_lacks_is_refused_or_placed_as_declared(codec, tag, data):
    if not codec.caps.wire_compatible:
        pytest.skip(f"{codec.name} does not declare wire compatibility; the device text of its own wire is its own")
    if not isinstance(REFERENCE, ReferenceCodec):
        pytest.skip(f"engine {ENGINE.name}'s wire reference is not the reference wire (v1), whose tensor device text this property rewrites")
    msg = draw_message(data, tag, codec)
    index = absent_cuda_index() + data.draw(st.integers(0, 3), label="CUDA devices past the last one here")
    device = f"cuda:{index}"
    body, *rest = [bytes(f) for f in reference_frames(REFERENCE, msg)]
    moved, count = from_device(body, device)
    assume(count > 0)  # a message of this type that happens to hold no tensor says nothing here
    event(f"{min(count, 4)}{'+' if count > 4 else ''} tensors sent from a device the receiver lacks")
    frames = [moved, *rest]
    mapped = codec.caps.map_location
    try:
        decoded = codec.decode(frames, type(msg))
    except codec.caps.decode_error as exc:
        if mapped is None:
            return  # refused, as pickle refuses it
        raise PropertyFailure(
            codec=codec.name,
            what=f"a tensor sent from {device} was refused although the codec declares map_location={mapped!r}",
            message=msg,
            details=[f"{type(exc).__qualname__}: {str(exc)[:200]}"],
            finding=Finding.of("refuses", type(exc).__qualname__, str(exc)),
        ) from None
    if mapped is None:
        _decoded_without_a_declared_mapping(codec, msg, decoded, device, count)
        return
    expected = without_dtypes(msg, (), map_location=mapped)
    check_equivalent(expected, decoded, codec=codec.name, what=f"tensors sent from {device}, mapped to {mapped}, decode wrongly", msg=msg)


def _decoded_without_a_declared_mapping(codec, msg, decoded, device: str, count: int) -> None:
    """The property's check for a codec that declares no ``map_location``: decoding at all is the failure."""
    placed = ", ".join(sorted(_devices_found(decoded))) or "nowhere (no tensor left)"
    raise PropertyFailure(
        codec=codec.name,
        what=f"{count} tensor(s) sent from {device}, a device this receiver lacks, were decoded onto {placed} without a declared map_location",
        message=msg,
        details=["refuse them with the declared decode error, or declare map_location (conformance/plugin.py)"],
        finding=Finding.of("device-moved", placed.replace(", ", "|"), "decoded onto another device without a declared map_location"),
    )
