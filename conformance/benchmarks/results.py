"""Read a pytest-benchmark JSON file into flat records (shared by the table and the gate)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional

__all__ = ["Record", "load", "records_from"]


@dataclasses.dataclass(frozen=True)
class Record:
    """One benchmark of a run: what it measured (family, op, codec) and its statistics in seconds."""

    name: str  #: pytest-benchmark's ``fullname`` (module path and parameters): the key across runs
    family: str
    op: str
    codec: str
    median: float
    iqr: float
    rounds: int
    extra: Dict[str, Any]

    @property
    def rel_iqr(self) -> float:
        """The run's own spread: IQR over median (0 when the median is 0)."""
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def gate_time(self) -> bool:
        """Whether the time is a measure worth gating (not a probe process or a whole live run)."""
        return bool(self.extra.get("gate_time", True))


def records_from(data: Dict[str, Any]) -> List[Record]:
    out = []
    for bench in data.get("benchmarks", []):
        extra = dict(bench.get("extra_info") or {})
        stats = bench["stats"]
        out.append(
            Record(
                name=bench.get("fullname") or bench["name"],
                family=str(extra.get("family", bench.get("group") or "?")),
                op=str(extra.get("op", "?")),
                codec=str(extra.get("codec", "?")),
                median=float(stats["median"]),
                iqr=float(stats.get("iqr", 0.0)),
                rounds=int(stats.get("rounds", 0)),
                extra=extra,
            )
        )
    return out


def load(path: str) -> List[Record]:
    with open(path) as f:
        return records_from(json.load(f))


def machine_line(path: str) -> Optional[str]:
    """A short description of where and what was measured, from the JSON's own metadata."""
    with open(path) as f:
        data = json.load(f)
    info = data.get("machine_info") or {}
    commit = data.get("commit_info") or {}
    cpu = (info.get("cpu") or {}).get("brand_raw") or info.get("processor") or "?"
    count = (info.get("cpu") or {}).get("count")
    parts = [
        f"{cpu}{f' ({count} cores)' if count else ''}",
        f"Python {info.get('python_version', '?')}",
        f"commit {str(commit.get('id', '?'))[:10]}{' (dirty)' if commit.get('dirty') else ''}",
        str(data.get("datetime", ""))[:19],
    ]
    return ", ".join(p for p in parts if p)
