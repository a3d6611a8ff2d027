"""The codec's error types.

Decoding never raises anything but :class:`DecodeError` for bad input, and
encoding raises :class:`EncodeError` (a ``TypeError``) for a value the schema
cannot carry. Both name the path of the offending value (``$.field[3]``).
"""

from __future__ import annotations

from typing import Optional

import msgspec

__all__ = ["DecodeError", "EncodeError", "format_path"]


def format_path(parts) -> str:
    """Render path parts as ``$.field[3].key``: str parts are attributes, int parts indices."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif isinstance(part, str) and part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


class DecodeError(msgspec.DecodeError):
    """Frames that do not decode to a valid message under the codec's limits.

    ``path`` is where in the message the problem is (``$`` when it is the
    frames as a whole), ``reason`` what is wrong with it.
    """

    def __init__(self, reason: str, path: Optional[str] = None):
        self.reason = reason
        self.path = path
        super().__init__(f"{reason} - at `{path}`" if path else reason)


class EncodeError(TypeError):
    """A value the schema cannot carry, found at ``path``."""

    def __init__(self, reason: str, path: str = "$"):
        self.reason = reason
        self.path = path
        super().__init__(f"{reason} - at `{path}`")
