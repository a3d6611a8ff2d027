"""The seeded long run: millions of hostile inputs across worker processes, watched for hangs and crashes.

Input ``i`` of a run with seed ``s`` is fully determined by ``(s, i)`` (see
:meth:`~.choices.RandomChoices.for_input`), so any finding is reproduced with
``reproduce(spec, s, i)`` whatever the number of workers. Worker ``w`` of
``W`` takes the inputs ``i`` with ``i % W == w``.

A worker publishes the index it is decoding before each input. The parent
watches: a worker that has not moved for ``hang_timeout`` seconds is killed
and its input recorded as a ``hang``; a worker that dies (a segfault, the
kernel's OOM killer, ``os._exit`` in the decoder) is recorded as a ``crash``.
Either way a new worker resumes after that input, so one bad input costs one
finding, not the run. Workers run with their address space limited
(``address_space_limit``) so a decoder that asks for terabytes gets an
exception instead of the machine's memory.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import resource
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..interrupts import stop_with_parent
from .attacks import ATTACKS, attack
from .choices import RandomChoices
from .harness import FINDING_KINDS, OK_KINDS, Harness, Outcome
from .pickle_probe import PickleProbe

__all__ = ["Target", "RunConfig", "RunResult", "Finding", "run", "reproduce"]


@dataclass(frozen=True)
class Target:
    """The implementation: a ``--codec`` spec, or a ``--testee`` command (exactly one)."""

    codec: Optional[str] = None
    testee: Optional[str] = None

    def load(self):
        from conformance.plugin import load_codec, load_testee

        return load_testee(self.testee) if self.testee else load_codec(self.codec)

    def __str__(self) -> str:
        return f"testee {self.testee!r}" if self.testee else f"codec {self.codec!r}"


@dataclass(frozen=True)
class RunConfig:
    frames: int = 100_000
    seed: int = 0
    workers: int = 2
    per_type: int = 2
    time_bound: float = 2.0
    memory_bound: int = 256 << 20
    hang_timeout: float = 20.0
    address_space_limit: int = 16 << 30
    examples_per_finding: int = 3
    allow_code_executing: bool = False


@dataclass
class Finding:
    """One input that broke the contract; ``frames`` (hex) when it was small enough to keep."""

    index: int
    attack: str
    seed_label: str
    kind: str
    error_type: str
    error: str
    frames: Optional[List[str]] = None

    @property
    def signature(self) -> str:
        return f"{self.kind}:{self.error_type}" if self.error_type else self.kind


# Findings the summary reports on their own; every other finding kind counts as an "other exception".
_COUNTED_APART = ("hang", "slow", "memory", "code-executed")


@dataclass
class RunResult:
    target: str
    config: Dict[str, Any]
    tried: int = 0
    counts: Dict[str, int] = field(default_factory=dict)
    by_attack: Dict[str, Dict[str, int]] = field(default_factory=dict)
    signatures: Dict[str, int] = field(default_factory=dict)
    findings: List[Finding] = field(default_factory=list)
    max_peak_bytes: int = 0
    max_seconds: float = 0.0
    seconds: float = 0.0
    seeds: int = 0
    skipped_seeds: int = 0
    worker_restarts: int = 0

    @property
    def passed(self) -> bool:
        return not any(self.counts.get(k, 0) for k in FINDING_KINDS)

    def summary(self) -> str:
        c = self.counts
        other = sum(c.get(k, 0) for k in FINDING_KINDS if k not in _COUNTED_APART)
        lines = [
            f"fuzz {self.target}: {self.tried} frames in {self.seconds:.1f} s "
            f"({self.tried / max(self.seconds, 1e-9):,.0f}/s, {self.config['workers']} workers, seed {self.config['seed']}, "
            f"{self.seeds} seed messages)",
            f"  decoded {c.get('decoded', 0)}, rejected with the decode error {c.get('rejected', 0)}, "
            f"other exceptions {other}, hangs {c.get('hang', 0)}, slow {c.get('slow', 0)}, "
            f"over the memory bound {c.get('memory', 0)}, code executed {c.get('code-executed', 0)}"
            + (f" ({c['unraisable-in-__del__']} exceptions ignored in __del__)" if c.get("unraisable-in-__del__") else ""),
            f"  peak memory of one decode +{self.max_peak_bytes / 2**20:.1f} MiB (bound {self.config['memory_bound'] / 2**20:.0f} MiB), "
            f"slowest input {self.max_seconds * 1e3:.1f} ms (bound {self.config['time_bound'] * 1e3:.0f} ms)",
        ]
        for sig, n in sorted(self.signatures.items(), key=lambda kv: -kv[1]):
            example = next((f for f in self.findings if f.signature == sig), None)
            where = f" e.g. input {example.index} ({example.attack} on {example.seed_label}): {example.error[:160]}" if example else ""
            lines.append(f"  FINDING {sig} x{n}{where}")
        lines.append(f"FUZZ {'PASSED' if self.passed else 'FAILED'}: {self.tried} frames, {sum(self.signatures.values())} findings")
        return "\n".join(lines)

    def to_json(self) -> Dict[str, Any]:
        out = asdict(self)
        out["passed"] = self.passed
        return out


#: The position a worker shows until its codec is loaded and its seeds are built.
_STARTING = -1
#: How long a worker may take to import, load the codec and build its seeds.
_STARTUP_GRACE = 180.0


def _input(seeds, seed: int, index: int, probe: PickleProbe) -> Tuple[str, str, List[bytes]]:
    c = RandomChoices.for_input(seed, index)
    entry = c.choice(seeds)
    name = c.choice(sorted(ATTACKS))
    return name, entry.label, attack(entry, c, probe, name)


def _worker(target: Target, config: RunConfig, probe_dir: str, worker: int, start: int, skip, position, out_queue) -> None:
    stop_with_parent()
    try:
        limit = config.address_space_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass
    from .seeds import build_seeds

    counts: Counter = Counter()
    # An exception in a decoded object's __del__ (SGLang's ShmPointerMMData on a
    # half-built value) is printed, not raised: count it instead of flooding the log.
    sys.unraisablehook = lambda unraisable: counts.update(["unraisable-in-__del__"])
    codec = target.load()
    probe = PickleProbe(probe_dir)
    seeds, skipped = build_seeds(codec, per_type=config.per_type, seed=config.seed)
    types = _message_types()
    harness = Harness(codec, probe, time_bound=config.time_bound, memory_bound=config.memory_bound, message_types=types.values())
    by_attack: Dict[str, Counter] = {}
    findings: List[Finding] = []
    per_sig: Counter = Counter()
    max_peak, max_seconds = 0, 0.0
    last_flush = time.monotonic()

    def flush(done: bool, index: int) -> None:
        out_queue.put(("progress", worker, index, dict(counts), {k: dict(v) for k, v in by_attack.items()},
                       findings[:], dict(per_sig), max_peak, max_seconds, len(seeds), skipped, done))
        findings.clear()
        counts.clear()
        by_attack.clear()
        per_sig.clear()

    index = start
    while index < config.frames:
        if index in skip:  # the parent recorded it as a hang or crash
            index += config.workers
            continue
        position.value = index
        name, label, frames = _input(seeds, config.seed, index, probe)
        outcome = harness.run(frames, types.get(label))
        counts[outcome.kind] += 1
        by_attack.setdefault(name, Counter())[outcome.kind] += 1
        max_peak = max(max_peak, outcome.peak_bytes)
        max_seconds = max(max_seconds, outcome.seconds)
        if outcome.is_finding:
            per_sig[outcome.signature] += 1
            if per_sig[outcome.signature] <= config.examples_per_finding:
                keep = [f.hex() for f in frames] if sum(map(len, frames)) <= 1 << 20 else None
                findings.append(Finding(index, name, label, outcome.kind, outcome.error_type, outcome.error, keep))
        index += config.workers
        now = time.monotonic()
        if now - last_flush > 0.5:
            flush(False, index)
            last_flush = now
    flush(True, index)
    close = getattr(codec.impl, "close", None)
    if callable(close):
        close()


def run(target: Target, config: RunConfig = RunConfig(), *, progress=None) -> RunResult:
    """Run ``config.frames`` inputs against ``target``; see the module doc for what is watched."""
    probe = PickleProbe()
    result = RunResult(str(target), asdict(config))
    ctx = mp.get_context("spawn")
    out_queue = ctx.Queue()
    started = time.monotonic()
    workers: Dict[int, Dict[str, Any]] = {}
    seeds_cache: List[Any] = []

    def launch(worker: int, start: int, skip: frozenset) -> None:
        position = ctx.Value("q", _STARTING, lock=False)
        proc = ctx.Process(
            target=_worker, args=(target, config, probe.directory, worker, start, skip, position, out_queue), daemon=True
        )
        proc.start()
        workers[worker] = dict(proc=proc, position=position, flushed=start, skip=skip, seen=_STARTING,
                               moved=time.monotonic(), done=False)

    def parent_seeds():
        if not seeds_cache:
            from .seeds import build_seeds

            seeds_cache.append(build_seeds(target.load(), per_type=config.per_type, seed=config.seed)[0])
        return seeds_cache[0]

    def record(index: int, kind: str, detail: str) -> None:
        result.counts[kind] = result.counts.get(kind, 0) + 1
        result.tried += 1
        result.signatures[kind] = result.signatures.get(kind, 0) + 1
        try:
            name, label, frames = _input(parent_seeds(), config.seed, index, probe)
            keep = [f.hex() for f in frames] if sum(map(len, frames)) <= 1 << 20 else None
        except Exception:
            name, label, keep = "?", "?", None
        result.findings.append(Finding(index, name, label, kind, "", detail, keep))

    def handle(msg) -> None:
        _, worker, index, counts, by_attack, findings, per_sig, peak, secs, nseeds, skipped, done = msg
        entry = workers[worker]
        entry["flushed"] = index
        entry["done"] = entry["done"] or done
        for k, v in counts.items():
            result.counts[k] = result.counts.get(k, 0) + v
            if k in OK_KINDS or k in FINDING_KINDS:
                result.tried += v
        for name, kinds in by_attack.items():
            slot = result.by_attack.setdefault(name, {})
            for k, v in kinds.items():
                slot[k] = slot.get(k, 0) + v
        for sig, v in per_sig.items():
            result.signatures[sig] = result.signatures.get(sig, 0) + v
        result.findings.extend(findings)
        result.max_peak_bytes = max(result.max_peak_bytes, peak)
        result.max_seconds = max(result.max_seconds, secs)
        result.seeds, result.skipped_seeds = nseeds, skipped

    for w in range(min(config.workers, max(1, config.frames))):
        launch(w, w, frozenset())
    while not all(entry["done"] for entry in workers.values()):
        try:
            handle(out_queue.get(timeout=0.5))
            while True:
                handle(out_queue.get_nowait())
        except queue.Empty:
            pass
        if progress:
            progress(result)
        now = time.monotonic()
        for worker, entry in list(workers.items()):
            if entry["done"]:
                continue
            proc, current = entry["proc"], entry["position"].value
            if current != entry["seen"]:
                entry["seen"], entry["moved"] = current, now
                continue
            bound = _STARTUP_GRACE if current == _STARTING else config.hang_timeout
            if not proc.is_alive():
                # everything it sent before dying has been handled above
                if current == _STARTING:
                    raise RuntimeError(f"fuzz worker for {target} died while starting (exit code {proc.exitcode})")
                record(current, "crash", f"worker died with exit code {proc.exitcode} on this input")
            elif now - entry["moved"] > bound:
                proc.kill()
                proc.join()
                if current == _STARTING:
                    raise RuntimeError(f"fuzz worker for {target} did not start within {_STARTUP_GRACE:.0f} s")
                record(current, "hang", f"no progress for {config.hang_timeout:.0f} s on this input")
            else:
                continue
            result.worker_restarts += 1
            # inputs since its last report were lost with it: run them again, all but this one
            launch(worker, entry["flushed"], entry["skip"] | {current})
    for entry in workers.values():
        entry["proc"].join(timeout=10)
    result.seconds = time.monotonic() - started
    result.findings.sort(key=lambda f: f.index)
    return result


def reproduce(target: Target, seed: int, index: int, *, per_type: int = 2) -> Tuple[str, List[bytes], Outcome]:
    """Rebuild input ``index`` of a run seeded ``seed`` and decode it here: ``(attack, frames, outcome)``."""
    from .seeds import build_seeds

    codec = target.load()
    probe = PickleProbe()
    seeds, _ = build_seeds(codec, per_type=per_type, seed=seed)
    name, label, frames = _input(seeds, seed, index, probe)
    types = _message_types()
    return name, frames, Harness(codec, probe, message_types=types.values()).run(frames, types.get(label))


def _message_types() -> Dict[str, type]:
    """The selected engine's message types by name (a seed's label is its type's name)."""
    from conformance.properties import MESSAGE_TYPES

    return dict(MESSAGE_TYPES)
