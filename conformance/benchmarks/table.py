"""Turn one pytest-benchmark JSON run into the README's markdown table and its target lines.

One row per family and measure, one column per codec. Time cells read
``median (speed-up)`` where the speed-up is pickle's median over the codec's
median *in the same run* (above 1 is faster than pickle). Bytes cells read
``size (size / pickle's size)``. ZeroMQ cells add round trips per second and
GB/s (both directions' bytes on the wire over the median). Memory cells are
the decode's peak memory over its payload. Live cells are requests per second
and the mean inter-token latency.

The columns are the benchmarks' codecs (:func:`.codecs.codec_names`: the
reference and pickle codecs, the default engine's ``bench_codecs`` under the
engine's labels, the candidate) and ``memcpy``, those the run measured.

Below the table, one line per target says met or MISSED with the figures;
a target that could not be measured (the engine's codec not installed, no
memory probe) says so instead of passing. Reference wire v1 is compared with
the engine's ``bench_target`` (SGLang 0.5.23's codec for the default engine).
"""

from __future__ import annotations

import statistics
from typing import Dict, Iterable, List, Optional, Tuple

from .codecs import bench_target, codec_names
from .codecs import label as codec_label
from .results import Record

__all__ = ["render", "targets", "columns", "header", "fmt_time", "fmt_bytes"]

#: Column headers of the codecs every run has; an engine's codecs take the engine's labels.
HEADERS = {
    "pickle": "pickle (baseline)",
    "pickle-oob": "pickle 5 + out-of-band",
    "reference-v1": "reference wire v1",
    "reference-v2": "reference wire v2",
    "candidate": "candidate (IPC_BENCH_CODEC)",
    "memcpy": "memcpy",
}
OP_LABELS = {
    "encode": "encode",
    "decode": "decode",
    "roundtrip": "round trip",
    "bytes": "bytes on the wire",
    "zmq": "ZeroMQ ipc:// round trip",
    "memory": "decode peak memory / payload",
    "live": "live: req/s, mean ITL",
}
OP_ORDER = ["encode", "decode", "roundtrip", "bytes", "zmq", "memory", "live"]

#: Targets of the issue, in one place.
ROUND_TRIP_VS_PICKLE_MEDIAN = 3.0
ROUND_TRIP_VS_PICKLE_FLOOR = 1.0
#: Reference wire v1 round trip / the engine's bench target's, at the corpus median.
V1_VS_ENGINE_MEDIAN = 1.2
#: Reference wire v1 round trip / the engine's bench target's, in every family.
V1_VS_ENGINE_FLOOR = 1.0
#: Wire v1 round trip of a 64 MiB tensor, in memcpys of its bytes, at most (larger ones are shown too).
V1_ROUND_TRIP_MEMCPYS = 4.0
V1_MEMCPY_TARGET_BYTES = 64 << 20
MEMCPY_TARGET_MIN_BYTES = 16 << 20
PEAK_RATIO_TARGET = 1.1


def columns() -> List[str]:
    """Every column a run may have, in order: the benchmarks' codecs, then ``memcpy``."""
    return [*codec_names(), "memcpy"]


def header(codec: str) -> str:
    """The column header of ``codec``."""
    return HEADERS.get(codec) or codec_label(codec)


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _ratio(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}×"
    return f"{x:.2f}×" if x < 10 else f"{x:.3g}×"


def _index(records: Iterable[Record]) -> Tuple[List[str], Dict[Tuple[str, str, str], Record]]:
    families: List[str] = []
    table: Dict[Tuple[str, str, str], Record] = {}
    for r in records:
        if r.family not in families:
            families.append(r.family)
        table[(r.family, r.op, r.codec)] = r
    return families, table


def _cell(op: str, r: Optional[Record], base: Optional[Record]) -> str:
    if r is None:
        return "–"
    if op == "bytes":
        n = r.extra.get("bytes_on_wire")
        if n is None:
            return "–"
        b = base.extra.get("bytes_on_wire") if base is not None else None
        return fmt_bytes(n) + (f" ({_ratio(n / b)})" if b else "")
    if op == "memory":
        ratio = r.extra.get("peak_ratio")
        return "–" if ratio is None else f"{ratio:.2f}"
    if op == "live":
        rps, itl = r.extra.get("requests_per_s"), r.extra.get("mean_itl_s")
        itl_text = "n/a" if itl is None else fmt_time(itl)
        return "–" if rps is None else f"{rps:.1f}/s, {itl_text}"
    text = fmt_time(r.median)
    if base is not None and r is not base and r.median > 0:
        text += f" ({_ratio(base.median / r.median)})"
    if op == "zmq" and r.median > 0:
        n = r.extra.get("bytes_on_wire") or 0
        text += f"; {1 / r.median:,.0f}/s, {2 * n / r.median / 1e9:.2f} GB/s"
    return text


def render(records: List[Record], *, command: Optional[str] = None, machine: Optional[str] = None) -> str:
    """The markdown table of one run, then the target lines."""
    families, table = _index(records)
    present = {r.codec for r in records}
    shown = [c for c in columns() if c in present]
    lines = []
    if machine:
        lines.append(f"Measured in one run on {machine}.")
    if command:
        lines.append(f"Command: `{command}`")
    if lines:
        lines.append("")
    lines.append(
        "Times are medians; (×) is the speed-up over pickle measured in the same run (above 1 is faster), "
        "for bytes the size relative to pickle's."
    )
    lines.append("")
    lines.append("| family | measure | " + " | ".join(header(c) for c in shown) + " |")
    lines.append("|---|---|" + "---|" * len(shown))
    for family in families:
        ops = [op for op in OP_ORDER if op != "bytes" and any((family, op, c) in table for c in shown)]
        if "encode" in ops:  # bytes on the wire come with the encode benchmarks
            ops.insert(ops.index("roundtrip") + 1 if "roundtrip" in ops else len(ops), "bytes")
        for i, op in enumerate(ops):
            source_op = "encode" if op == "bytes" else op
            base = table.get((family, source_op, "pickle"))
            cells = [_cell(op, table.get((family, source_op, c)), base) for c in shown]
            lines.append(f"| {family if i == 0 else ''} | {OP_LABELS.get(op, op)} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Targets:")
    lines.append("")
    lines.extend(f"- {line}" for line in targets(records))
    return "\n".join(lines) + "\n"


def _speedups(table, families, codec: str, versus: str) -> Dict[str, float]:
    out = {}
    for f in families:
        a, b = table.get((f, "roundtrip", versus)), table.get((f, "roundtrip", codec))
        if a is not None and b is not None and b.median > 0:
            out[f] = a.median / b.median
    return out


def _mark(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def _engine_targets(table, corpus: List[str]) -> List[str]:
    """Reference wire v1 against the engine's bench target; nothing when the engine names none."""
    target = bench_target()
    if target is None:
        return []
    name = codec_label(target)
    vs = _speedups(table, corpus, "reference-v1", target)
    if not vs:
        return [f"Reference wire v1 vs {name}: not measured ({name} not installed in this run)."]
    med = statistics.median(vs.values())
    behind = sorted(f for f, x in vs.items() if x < V1_VS_ENGINE_FLOOR)
    return [
        f"{_mark(med >= V1_VS_ENGINE_MEDIAN)}: reference wire v1 round trip at least {V1_VS_ENGINE_MEDIAN:g}× "
        f"{name}'s codec at the median: {_ratio(med)} over {len(vs)} families "
        f"(range {_ratio(min(vs.values()))} to {_ratio(max(vs.values()))}). Timed one codec after another; "
        "`python -m conformance.benchmarks interleaved` gives ratios that hold when the machine's speed drifts.",
        f"{_mark(not behind)}: reference wire v1 round trip at least {V1_VS_ENGINE_FLOOR:g}× {name}'s codec "
        f"in every family" + (f"; behind on {', '.join(f'{f} {_ratio(vs[f])}' for f in behind)}." if behind else "."),
    ]


def targets(records: List[Record]) -> List[str]:
    """One line per target of the issue: met, MISSED, or not measured, with the figures."""
    families, table = _index(records)
    corpus = [f for f in families if (f, "roundtrip", "pickle") in table]
    lines = []
    for codec, label in (("reference-v1", "wire v1"), ("reference-v2", "wire v2")):
        ups = _speedups(table, corpus, codec, "pickle")
        if not ups:
            lines.append(f"Reference {label} round trip vs pickle: not measured.")
            continue
        med = statistics.median(ups.values())
        worst = min(ups, key=ups.__getitem__)
        lines.append(
            f"{_mark(med >= ROUND_TRIP_VS_PICKLE_MEDIAN)}: reference {label} round trip at least "
            f"{ROUND_TRIP_VS_PICKLE_MEDIAN:g}× pickle at the corpus median: {_ratio(med)} over {len(ups)} families."
        )
        slower = sorted(f for f, x in ups.items() if x < ROUND_TRIP_VS_PICKLE_FLOOR)
        lines.append(
            f"{_mark(not slower)}: reference {label} round trip never slower than pickle: slowest "
            f"{_ratio(ups[worst])} ({worst})" + (f"; slower on {', '.join(slower)}." if slower else ".")
        )
    lines.extend(_engine_targets(table, corpus))
    copies = []
    for f in families:
        v2, mc = table.get((f, "roundtrip", "reference-v2")), table.get((f, "roundtrip", "memcpy"))
        if v2 is not None and mc is not None and mc.extra.get("payload_bytes", 0) >= MEMCPY_TARGET_MIN_BYTES:
            copies.append((f, v2.median / mc.median))
    if copies:
        over = [f for f, x in copies if x >= 1.0]
        detail = ", ".join(f"{f} {x:.3g}" for f, x in copies)
        lines.append(
            f"{_mark(not over)}: wire v2 round trip of a tensor of {fmt_bytes(MEMCPY_TARGET_MIN_BYTES)} or more "
            f"costs less than one memcpy of its bytes (round trip / memcpy: {detail})."
        )
    else:
        lines.append("Wire v2 round trip vs one memcpy: not measured (no single-tensor family of 1 MiB or more).")
    v1_copies = []
    for f in families:
        v1, mc = table.get((f, "roundtrip", "reference-v1")), table.get((f, "roundtrip", "memcpy"))
        if v1 is not None and mc is not None and mc.extra.get("payload_bytes", 0) >= V1_MEMCPY_TARGET_BYTES:
            v1_copies.append((f, v1.median / mc.median, mc.extra["payload_bytes"] == V1_MEMCPY_TARGET_BYTES))
    if any(at_target for _, _, at_target in v1_copies):
        over = [f for f, x, at_target in v1_copies if at_target and x > V1_ROUND_TRIP_MEMCPYS]
        detail = ", ".join(f"{f} {x:.2f}" for f, x, _ in v1_copies)
        lines.append(
            f"{_mark(not over)}: wire v1 round trip of a {fmt_bytes(V1_MEMCPY_TARGET_BYTES)} tensor "
            f"costs at most {V1_ROUND_TRIP_MEMCPYS:g} memcpy of its bytes (round trip / memcpy: {detail})."
        )
    peaks = [(r.family, r.extra["peak_ratio"]) for r in records if r.op == "memory" and r.codec == "reference-v2" and r.extra.get("peak_ratio") is not None]
    if peaks:
        over = [f for f, x in peaks if x > PEAK_RATIO_TARGET]
        detail = ", ".join(f"{f} {x:.2f}" for f, x in peaks)
        v1_peaks = [(r.family, r.extra["peak_ratio"]) for r in records if r.op == "memory" and r.codec == "reference-v1" and r.extra.get("peak_ratio") is not None]
        v1_text = ""
        if v1_peaks:
            v1_over = [f for f, x in v1_peaks if x > PEAK_RATIO_TARGET]
            v1_text = (
                " Wire v1 from a writable frame (tensors are views of it where their bytes are aligned, "
                "copied where not; see reference_codec/wire.py, Copies per buffer): "
                + ("within target." if not v1_over else f"over on {', '.join(f'{f} {x:.2f}' for f, x in v1_peaks if x > PEAK_RATIO_TARGET)}.")
            )
        lines.append(
            f"{_mark(not over)}: wire v2 decode peak memory at most {PEAK_RATIO_TARGET:g}× the payload "
            f"({detail}).{v1_text}"
        )
    else:
        lines.append("Decode peak memory: not measured (needs Linux /proc; test_memory.py).")
    return lines
