"""Feed one input to a decoder and classify what happened.

The contract every decoder must keep on every input (the fuzz properties and
the long loop both check it):

* it returns a message of the schema, or raises its declared decode error
  (``decode_error`` in :mod:`conformance.plugin`); any other exception is a
  finding, because a receiver loop that catches only the decode error dies;
* a message it returns, the same codec encodes again (``not-re-encodable``
  otherwise): a decoder that accepts what no encoder writes hands the next hop
  (a forwarding gateway, a detokenizer) a message it cannot send;
* it finishes within ``time_bound`` seconds (a hang is a denial of service);
* its peak resident memory grows by at most ``memory_bound`` bytes;
* it never executes code: the :class:`~.pickle_probe.PickleProbe` file does
  not exist afterwards.

Outcomes ``decoded`` and ``rejected`` keep the contract; every other
:data:`FINDING_KINDS` entry breaks it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from conformance.peak_memory import PeakMeter

from .pickle_probe import PickleProbe

__all__ = ["Outcome", "Harness", "OK_KINDS", "FINDING_KINDS"]

OK_KINDS = ("decoded", "rejected")
#: What breaks the contract. ``hang`` and ``crash`` are seen only by the loop's watchdog (the process is gone).
FINDING_KINDS = ("other-exception", "not-a-message", "not-re-encodable", "slow", "memory", "code-executed", "hang", "crash")

@dataclass(frozen=True)
class Outcome:
    """What one input did: ``kind`` (see module doc), the exception if any, time and peak memory."""

    kind: str
    error_type: str = ""
    error: str = ""
    seconds: float = 0.0
    peak_bytes: int = 0

    @property
    def is_finding(self) -> bool:
        return self.kind not in OK_KINDS

    @property
    def signature(self) -> str:
        """What distinguishes one bug from another: the kind and exception type (messages vary by input)."""
        return f"{self.kind}:{self.error_type}" if self.error_type else self.kind

    def describe(self) -> str:
        detail = f" {self.error_type}: {self.error}" if self.error_type else ""
        return f"{self.kind}{detail} ({self.seconds * 1e3:.1f} ms, peak +{self.peak_bytes / 2**20:.1f} MiB)"


class Harness:
    """Decodes inputs with ``codec`` (a :class:`~conformance.plugin.CodecUnderTest`) and classifies each.

    A decoded value must be one of ``message_types`` (default: the reference
    schema's, SGLang's) or, for a codec with ``typed_decode`` told the type the
    frames were sent as, of that type.
    """

    def __init__(
        self,
        codec: Any,
        probe: PickleProbe,
        *,
        time_bound: float = 2.0,
        memory_bound: int = 256 << 20,
        message_types: Iterable[type],
    ):
        self.message_classes = tuple(message_types)
        self.codec = codec
        self.probe = probe
        self.time_bound = time_bound
        self.memory_bound = memory_bound
        self.meter = PeakMeter()

    def run(self, frames: Sequence[bytes], msg_type: Optional[type] = None) -> Outcome:
        """Decode ``frames`` (as ``msg_type`` for a typed codec) and classify what happened."""
        codec = self.codec
        decode_error = codec.caps.decode_error
        self.meter.start()
        start = time.perf_counter()
        kind, error_type, error = "decoded", "", ""
        try:
            decoded = codec.decode(list(frames), msg_type)
        except decode_error as exc:
            kind, error_type, error = "rejected", type(exc).__name__, _first_line(exc)
        except RecursionError as exc:  # before Exception: the traceback alone is megabytes
            kind, error_type, error = "other-exception", "RecursionError", _first_line(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit from a decoder ends a receiver loop just the same
            kind, error_type, error = "other-exception", type(exc).__name__, _first_line(exc)
        else:
            # A tagged frame damaged into another valid tag is still a message; a typed decode must give its type.
            expected = msg_type if msg_type is not None and codec.caps.typed_decode else self.message_classes
            if not isinstance(decoded, expected):
                kind, error_type, error = "not-a-message", type(decoded).__name__, ""
        seconds = time.perf_counter() - start
        if kind == "decoded":
            try:
                codec.encode(decoded)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                kind, error_type, error = "not-re-encodable", type(exc).__name__, _first_line(exc)
        decoded = None
        peak = self.meter.growth()
        if self.probe.executed():
            self.probe.reset()
            return Outcome("code-executed", error_type, error or "a pickle payload ran", seconds, peak)
        if kind in OK_KINDS:
            if seconds > self.time_bound:
                return Outcome("slow", error_type, f"took {seconds:.2f} s (bound {self.time_bound} s)", seconds, peak)
            if peak > self.memory_bound:
                return Outcome("memory", error_type, f"peak +{peak} bytes (bound {self.memory_bound})", seconds, peak)
        return Outcome(kind, error_type, error, seconds, peak)


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text[:limit]
