"""What a failing property says: the failure, its signature, and the block a maintainer reads.

A :class:`PropertyFailure` carries the parts of a failure rather than one
string: the codec, what the property expected (``decode(encode(m)) differs
from m``), every :class:`~conformance.equivalence.Difference` found in the
message, the message itself and free-form detail lines. From them come

* its **headline**, one line that names the codec, the property and the
  first difference by reason and path *shape* (``$.logprobs[*][*]``), so that
  the same bug reads the same whichever example showed it; the failure lists
  match on it;
* its **signature**, the headline without the codec and with numbers folded
  (``length differs: N instead of N``): two failures with one signature are
  one bug, and only one of them is shrunk (see :mod:`conformance.runner.shrinking`);
* its **text** (``str(failure)``): the headline, the distinct differences with
  both values (bounded), a bounded summary of the message and the details.

Exceptions that are not a ``PropertyFailure`` (a codec raising ``TypeError``
on encode) get a headline and signature from :func:`exception_headline` and
:func:`exception_signature`, and their location from :func:`raised_at`.
"""

from __future__ import annotations

import os
import re
import reprlib
import traceback
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .equivalence import Difference
from .findings import Finding, finding_of, fold_numbers

__all__ = [
    "PropertyFailure",
    "CodecRaised",
    "NO_MESSAGE",
    "MAX_DISTINCT_DIFFERENCES",
    "MAX_SUMMARY_CHARS",
    "distinct_differences",
    "summarise",
    "fold_numbers",
    "exception_headline",
    "exception_signature",
    "raised_at",
]

#: Distinct differences shown per failure; the rest are counted.
MAX_DISTINCT_DIFFERENCES = 6
#: Longest message summary shown (characters).
MAX_SUMMARY_CHARS = 400
_HEADLINE_CHARS = 200


class _NoMessage:
    def __repr__(self) -> str:
        return "NO_MESSAGE"


#: ``message=`` default: the failure concerns no one message (arbitrary bytes, a schema).
NO_MESSAGE: Any = _NoMessage()

def _one_line(text: str, limit: int = _HEADLINE_CHARS) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


class PropertyFailure(AssertionError):
    """A property does not hold.

    Parameters
    ----------
    text
        A free-form description, used when ``what`` is not given (its first
        line is then the headline).
    codec
        The name of the implementation under test.
    what
        What the property found, short (``"decode(encode(m)) differs from m"``).
    differences
        Every difference found (:func:`conformance.equivalence.differences`);
        the headline names the first.
    message
        The message the property was checking, summarised in the text.
    details
        Further lines (frames in hex, the declared decode error).
    signature
        Overrides the derived signature (the bad-input properties use the
        finding kind and exception type, not the message of the moment).
    finding
        What the failure shows, for known-failure lists
        (:class:`~conformance.findings.Finding`); derived when not given: the
        first difference (``differs`` at its path shape), else ``fails`` with
        ``what``.
    """

    def __init__(
        self,
        text: str = "",
        *,
        codec: str = "",
        what: str = "",
        differences: Sequence[Difference] = (),
        message: Any = NO_MESSAGE,
        details: Sequence[str] = (),
        signature: Optional[str] = None,
        finding: Optional[Finding] = None,
    ) -> None:
        self.codec = codec
        self.what = what
        self.differences: Tuple[Difference, ...] = tuple(differences)
        self.message = message
        self.details: Tuple[str, ...] = tuple(details)
        self.text = text
        self._signature = signature
        self._finding = finding
        super().__init__(self.render())

    @property
    def headline(self) -> str:
        return _one_line(self._full_headline())

    def _full_headline(self) -> str:
        if not self.what:
            return self.text.strip().splitlines()[0] if self.text.strip() else ""
        line = f"[{self.codec}] {self.what}" if self.codec else self.what
        if self.differences:
            first = self.differences[0]
            line += f": {first.reason} at {first.path_shape or first.path}"
        return " ".join(line.split())

    @property
    def signature(self) -> str:
        if self._signature is not None:
            return self._signature
        headline = self.headline
        if self.codec and headline.startswith(f"[{self.codec}] "):
            headline = headline[len(self.codec) + 3 :]
        return fold_numbers(headline)

    @property
    def finding(self) -> Finding:
        if self._finding is not None:
            return self._finding
        if self.differences:
            first = self.differences[0]
            return Finding.of("differs", first.path_shape or first.path, first.reason)
        return Finding.of("fails", "", self.what or self.text)

    @property
    def kind(self) -> str:
        """The class of bug, whatever the property and path: the first difference's reason, else what was found.

        Numbers folded: ``type differs: list instead of tuple``, ``raised TypeError: ...``.
        """
        if self.differences:
            return fold_numbers(self.differences[0].reason)
        return fold_numbers(self.what or _one_line(self.text))

    @property
    def path_shape(self) -> str:
        """The first difference's path shape, or ``""``."""
        return (self.differences[0].path_shape or self.differences[0].path) if self.differences else ""

    def render(self) -> str:
        lines = [self.headline]
        full = self._full_headline()
        if full != self.headline:  # cut to fit one line: the rest is often the point (a decoder's message)
            lines.append(f"  in full: {full[:2000]}")
        if not self.what and "\n" in self.text.strip():
            lines += self.text.strip().splitlines()[1:]
        if self.differences:
            groups = distinct_differences(self.differences)
            shown = groups[:MAX_DISTINCT_DIFFERENCES]
            more = len(groups) - len(shown)
            lines.append(
                f"  differences: {len(groups)} distinct (of {len(self.differences)} found)"
                + (f", first {len(shown)} shown" if more else "")
            )
            for difference, count in shown:
                lines.append(f"    {_one_line(str(difference), 400)}" + (f"  (and {count - 1} more like it)" if count > 1 else ""))
        if self.message is not NO_MESSAGE:
            lines.append(f"  message: {summarise(self.message)}")
        lines += [f"  {d}" for d in self.details]
        return "\n".join(lines)

    def __reduce__(self):  # keep the parts across processes (xdist, multiprocessing)
        return (_rebuild, (self.text, self.codec, self.what, self.differences, self.message, self.details, self._signature, self._finding))


def _rebuild(text, codec, what, differences, message, details, signature, finding=None) -> PropertyFailure:
    return PropertyFailure(
        text, codec=codec, what=what, differences=differences, message=message, details=details, signature=signature, finding=finding
    )


class CodecRaised(PropertyFailure):
    """A property ended by an exception rather than by a check (a codec's ``TypeError`` on encode).

    Keeps what a maintainer needs of the exception (type, message, the
    innermost frames outside the suite) without its traceback, which for a
    ``RecursionError`` is thousands of frames.
    """

    def __init__(self, exc: BaseException, *, codec: str = "", message: Any = NO_MESSAGE, decode_error: Any = None) -> None:
        super().__init__(
            codec=codec,
            what=exception_headline(exc),
            message=message,
            details=[f"raised at {at}" for at in raised_at(exc)],
            signature=exception_signature(exc),
            finding=finding_of(exc, decode_error),
        )


def distinct_differences(found: Sequence[Difference]) -> List[Tuple[Difference, int]]:
    """``found`` grouped by (reason with numbers folded, path shape): the first of each group and its size, in order."""
    groups: Dict[Tuple[str, str], List[Any]] = {}
    for difference in found:
        key = (fold_numbers(difference.reason), difference.path_shape or difference.path)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [difference, 1]
    return [(d, n) for d, n in groups.values()]


class _SummaryRepr(reprlib.Repr):
    def repr_Ext(self, x: Any, level: int) -> str:  # msgspec's own repr is an address
        return f"Ext({x.code}, {self.repr1(x.data, level - 1)})"


_short = _SummaryRepr()
_short.maxstring = 60
_short.maxother = 80
_short.maxlist = 4
_short.maxtuple = 4
_short.maxdict = 4
_short.maxset = 4
_short.maxlevel = 3


def summarise(msg: Any) -> str:
    """A bounded one-line description of a message: its class and its fields, shortened.

    Fields at their default, and fields that are ``None``, ``False``, ``0`` or
    empty, are left out (the differences name every path that matters). At
    most :data:`MAX_SUMMARY_CHARS` characters; collections show four items,
    strings sixty characters, nesting three levels.
    """
    fields = getattr(msg, "__struct_fields__", None)
    if fields is None:
        text = _safe_repr(msg)
    else:
        defaults = getattr(msg, "__struct_defaults__", ())
        required = len(fields) - len(defaults)
        parts = []
        for i, name in enumerate(fields):
            value = getattr(msg, name)
            if _blank(value):
                continue
            if i >= required:
                default = defaults[i - required]
                if value is default or (type(value) is type(default) and _safe_eq(value, default)):
                    continue
            parts.append(f"{name}={_safe_repr(value)}")
        text = f"{type(msg).__name__}({', '.join(parts)})"
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[: MAX_SUMMARY_CHARS - 3] + "..."
    return text


def _blank(value: Any) -> bool:
    if value is None or value is False:
        return True
    if type(value) in (int, float) and value == 0 and str(value)[0] != "-":
        return True
    return type(value) in (str, bytes, list, tuple, dict, set) and len(value) == 0


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _safe_repr(value: Any) -> str:
    """A short repr without object addresses, which would make two runs' reports differ."""
    try:
        return _ADDRESS.sub("", _short.repr(value))
    except Exception:  # a broken repr must not hide the failure
        return f"<{type(value).__qualname__} object>"


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def exception_headline(exc: BaseException, codec: str = "") -> str:
    """``[codec] raised TypeError: first line of its message`` (bounded)."""
    text = _one_line(str(exc), 160)
    line = f"raised {type(exc).__qualname__}" + (f": {text}" if text else "")
    return f"[{codec}] {line}" if codec else line


def exception_signature(exc: BaseException) -> str:
    """What distinguishes one raised exception from another: its type and its message with numbers folded."""
    return fold_numbers(exception_headline(exc))


#: Frames from these packages are the suite's and its tools', not the code under test.
_OWN = tuple(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), sub) for sub in ("properties.py", "failures.py", "findings.py", "failure_list.py", "seeding.py", "shrinking.py", "plugin.py", "report.py", "suite")
)
_TOOLS = (os.sep + "hypothesis" + os.sep, os.sep + "_pytest" + os.sep, os.sep + "pluggy" + os.sep)


def raised_at(exc: BaseException, limit: int = 3) -> List[str]:
    """The innermost ``limit`` frames of ``exc``'s traceback outside the suite, Hypothesis and pytest.

    Each is ``file:line in function``, the file relative to the current
    directory where it is below it.
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_OWN) and not any(t in f.filename for t in _TOOLS)]
    out = []
    for frame in frames[-limit:]:
        name = frame.filename
        rel = os.path.relpath(name) if os.path.isabs(name) else name
        out.append(f"{name if rel.startswith('..') else rel}:{frame.lineno} in {frame.name}")
    return out
