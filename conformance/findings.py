"""What a failing example shows, in terms that survive a redraw, another machine and another torch build.

A :class:`Finding` is the part of a failure that stays the same when the
same bug shows up in another example: its **kind** (a small fixed vocabulary,
:data:`KINDS`), **where** it shows (a path shape for a value that differs, an
exception class for something raised) and a **detail** with numbers folded
(the difference's reason, or the exception's first line). Known-failure lists
(:mod:`conformance.runner.failure_list`) match findings, never test ids or the
wording of one example.

Kinds
-----
``differs``        a decoded value or type differs from the expected one; where: the path shape
                   (``$.logprobs[*][*]``); detail: the reason (``type differs: list instead of tuple``)
``raises``         the receiver raised something other than its declared decode error; where: the class
``sender-raises``  the sender (``encode``) raised; where: the class
``refuses``        input that must be accepted was refused with the declared decode error; where: the class
``accepts``        input that must be refused was decoded (an ``n_`` vector, a frame list of the wrong length)
``not-a-message``, ``not-re-encodable``, ``slow``, ``memory``, ``code-executed``
                   what the bad-input harness (:mod:`conformance.fuzz.harness`) found; where: the type involved
``bytes-differ``   re-encoding gave other bytes
``device-moved``   a tensor from a device the receiver lacks was placed elsewhere without a declared ``map_location``
``breaks-schema``  a schema differs from the reference where positional decoding breaks; where: the message type
``lost``           the transport lost, duplicated or could not decode a message
``fails``          anything else; detail: what the property says
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Tuple, Type, Union

__all__ = ["Finding", "KINDS", "finding_of", "mark_side", "side_of", "fold_numbers", "Pattern"]

KINDS = (
    "differs",
    "raises",
    "sender-raises",
    "refuses",
    "accepts",
    "not-a-message",
    "not-re-encodable",
    "slow",
    "memory",
    "code-executed",
    "bytes-differ",
    "device-moved",
    "breaks-schema",
    "lost",
    "fails",
)

_NUMBER = re.compile(r"\d+")
_DETAIL_CHARS = 160


def fold_numbers(text: str) -> str:
    """``text`` with every run of digits replaced by ``N`` (counts, indices and sizes vary by example)."""
    return _NUMBER.sub("N", text)


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


@dataclass(frozen=True)
class Finding:
    """One failing example, reduced to what identifies the bug.

    ``kind`` is one of :data:`KINDS`; ``where`` a path shape or a class name
    (``""`` when neither applies); ``detail`` one line, numbers folded, at
    most 160 characters.
    """

    kind: str
    where: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}: use one of {', '.join(KINDS)}")

    @classmethod
    def of(cls, kind: str, where: str = "", detail: str = "") -> "Finding":
        """A finding with ``where`` made one token and ``detail`` made one folded, bounded line."""
        where = "".join(where.split()) if where else ""
        detail = fold_numbers(_first_line(detail)).replace("#", "")[:_DETAIL_CHARS].strip()
        return cls(kind, where, detail)

    def __str__(self) -> str:
        text = self.kind + (f" {self.where}" if self.where else "")
        return text + (f" : {self.detail}" if self.detail else "")


# --- which side raised ------------------------------------------------------------

_SIDE = "_conformance_side"


def mark_side(exc: BaseException, side: str) -> None:
    """Record on ``exc`` that it escaped the codec's ``encode`` or ``decode`` (first mark wins)."""
    if getattr(exc, _SIDE, None) is None:
        try:
            setattr(exc, _SIDE, side)
        except Exception:  # an exception type with __slots__: the side stays unknown
            pass


def side_of(exc: BaseException) -> Optional[str]:
    """``"encode"``, ``"decode"`` or ``None`` (raised elsewhere, or unmarked)."""
    return getattr(exc, _SIDE, None)


DecodeError = Union[Type[BaseException], Tuple[Type[BaseException], ...]]


def finding_of(exc: BaseException, decode_error: Optional[DecodeError] = None) -> Finding:
    """The finding a test's exception shows.

    A :class:`~conformance.failures.PropertyFailure` says its own; any other
    exception is classified by the side it escaped from (:func:`mark_side`):
    the sender's raises are ``sender-raises``, the receiver's declared
    ``decode_error`` on a valid message ``refuses``, anything else ``raises``.
    """
    finding = getattr(exc, "finding", None)
    if isinstance(finding, Finding):
        return finding
    name = type(exc).__qualname__
    side = side_of(exc)
    if side == "encode":
        return Finding.of("sender-raises", name, str(exc))
    if side == "decode" and decode_error is not None and isinstance(exc, decode_error):
        return Finding.of("refuses", name, str(exc))
    return Finding.of("raises", name, str(exc))


# --- patterns ----------------------------------------------------------------------


class Pattern:
    """A list's pattern: ``*`` matches any run of characters, ``|`` separates alternatives; the rest is literal.

    ``[``, ``]`` and ``?`` are literal, so path shapes (``$.x[*]``) are written as they print.
    """

    __slots__ = ("text", "_regex")

    def __init__(self, text: str) -> None:
        if not text:
            raise ValueError("empty pattern")
        self.text = text
        alternatives = ["".join(".*" if ch == "*" else re.escape(ch) for ch in alt) for alt in text.split("|")]
        self._regex = re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)

    def matches(self, value: str) -> bool:
        return self._regex.match(value) is not None

    @property
    def is_wildcard(self) -> bool:
        return self.text == "*"

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Pattern) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)
