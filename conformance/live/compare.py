"""Identical behaviour across codecs: every request's answers, compared exactly.

Two runs of the same workload are identical when, for every request, the
same number of answers came back and each answer is equivalent under
:func:`conformance.equivalence.compare` (exact types, float bits, array
typecodes, tensor dtype/device/bytes), and every process counted the same
number of bad frames. A :class:`Mismatch` names the request, the codec pair,
the answer (chunk) index and the first differing path.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

from conformance.equivalence import compare

from .pipeline import PipelineResult
from .workload import WorkItem, describe

__all__ = ["Mismatch", "compare_results"]


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """The first difference for one request between a baseline run and another run.

    ``rid`` is ``"<pipeline>"`` for a difference in the processes' counters.
    ``chunk`` is the index of the answer in the request's stream (``None``
    when the streams' lengths differ or a request is missing). ``path`` is
    :class:`conformance.equivalence.Difference`'s path inside that answer.
    """

    rid: str
    baseline: str
    other: str
    chunk: Optional[int]
    path: str
    reason: str
    request: Optional[str] = None

    def __str__(self) -> str:
        where = f"answer {self.chunk}, " if self.chunk is not None else ""
        what = f" ({self.request})" if self.request else ""
        return f"{self.rid}{what} [{self.baseline} vs {self.other}]: {where}{self.path}: {self.reason}"


def compare_results(baseline: PipelineResult, other: PipelineResult, workload: Optional[List[WorkItem]] = None) -> List[Mismatch]:
    """Every request whose answers differ (its first difference), in workload order; ``[]`` if identical.

    ``baseline`` plays ``expected`` (pickle, usually) and ``other`` ``actual``.
    """
    items: Dict[str, WorkItem] = {w.rid: w for w in workload or []}
    order = list(items) or list(dict.fromkeys(list(baseline.outputs) + list(other.outputs)))
    pair = (baseline.codec, other.codec)
    out: List[Mismatch] = []
    for rid in order:
        if rid not in baseline.outputs and rid not in other.outputs:
            continue
        request = describe(items[rid]) if rid in items else None
        a, b = baseline.outputs.get(rid), other.outputs.get(rid)
        if a is None or b is None:
            missing = pair[0] if a is None else pair[1]
            out.append(Mismatch(rid, *pair, None, "$", f"no answer with {missing}", request))
            continue
        found = None
        for k, (expected, actual) in enumerate(zip(a, b)):
            difference = compare(expected, actual)
            if difference is not None:
                found = Mismatch(rid, *pair, k, difference.path, str(difference).split(": ", 1)[1], request)
                break
        if found is None and len(a) != len(b):
            found = Mismatch(rid, *pair, None, "$", f"answer count differs: got {len(b)}, expected {len(a)}", request)
        if found is not None:
            out.append(found)
    for hop in sorted(set(baseline.hop_stats) | set(other.hop_stats)):
        for counter in ("decode_errors", "decode_crashes", "unexpected_messages", "unexpected_answers"):
            x = baseline.hop_stats.get(hop, {}).get(counter, 0)
            y = other.hop_stats.get(hop, {}).get(counter, 0)
            if x != y:
                out.append(Mismatch("<pipeline>", *pair, None, f"$.{hop}.{counter}", f"got {y}, expected {x}"))
    return out
