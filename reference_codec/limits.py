"""Resource bounds a decoder enforces on every message."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DecodeLimits"]


@dataclass(frozen=True)
class DecodeLimits:
    """What one message may make the decoder do.

    Parameters
    ----------
    max_message_bytes
        Total bytes of all frames of one message.
    max_buffer_bytes
        Raw bytes of one tensor, ndarray or array.
    max_buffer_elements
        Elements one buffer may declare in its shape. Caps allocations of
        zero-itemsize or empty buffers that declare absurd shapes.
    max_depth
        Nesting depth of untyped values (``object`` / ``Any`` fields). Typed
        fields are bounded by the schema itself.
    max_frames
        Frames in one message (wire v2 buffers plus the body).
    """

    max_message_bytes: int = 4 << 30
    max_buffer_bytes: int = 2 << 30
    max_buffer_elements: int = 1 << 31
    max_depth: int = 64
    max_frames: int = 65536

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_buffer_bytes", "max_buffer_elements", "max_depth", "max_frames"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"DecodeLimits.{name} must be a positive int, got {value!r}")
