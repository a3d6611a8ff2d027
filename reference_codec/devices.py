"""Device strings on the wire and where a decoded tensor is placed."""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Union

import torch

from .wire import DEVICE_PATTERN

__all__ = ["MapLocation", "check_device_text", "resolve_device", "device_available"]

#: Where decoded tensors go: ``None`` (the device on the wire), one device for
#: all, a mapping from wire device to local device, or a callable.
MapLocation = Union[None, str, torch.device, Mapping[str, str], Callable[[str], str]]


def check_device_text(text: object) -> str:
    """Return ``text`` if it is a device string the wire allows, else ``ValueError``."""
    if not isinstance(text, str) or not DEVICE_PATTERN.match(text):
        raise ValueError(f"invalid device {text!r:.60}")
    return text


def device_available(device: torch.device) -> bool:
    """Whether this process can place a tensor on ``device``."""
    if device.type == "cpu":
        return True
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        return device.index is None or device.index < torch.cuda.device_count()
    backend = getattr(torch, device.type, None)
    is_available = getattr(backend, "is_available", None)
    if is_available is None or not is_available():
        return False
    count = getattr(backend, "device_count", None)
    return device.index is None or count is None or device.index < count()


def resolve_device(wire_device: str, map_location: MapLocation) -> torch.device:
    """The local device for a tensor sent from ``wire_device``; ``ValueError`` when unavailable."""
    target: Optional[str | torch.device]
    if map_location is None:
        target = wire_device
    elif isinstance(map_location, (str, torch.device)):
        target = map_location
    elif callable(map_location):
        target = map_location(wire_device)
    else:
        target = map_location.get(wire_device, wire_device)
    device = torch.device(target)
    if not device_available(device):
        hint = "" if map_location is not None else "; pass map_location= to place it elsewhere"
        raise ValueError(f"tensor was sent from device {wire_device!r} but {str(device)!r} is not available here{hint}")
    return device
