"""Coverage accounting: did the strategies generate every variant the schema allows?

``python -m strategies.coverage --examples N`` draws N messages of every type
and reports, for every field of every message and nested struct (a nested
struct's fields are aggregated over all messages that carry it):

``None``/``value``  both seen, where the type is Optional
``arms``            every arm of a union seen (``Union[str, List[str]]``: str, list)
``empty``/``full``  an empty and a non-empty value seen, for collections

Positions inside a field are followed too: ``embeddings[]`` is an element of
the ``embeddings`` list, ``customized_info{}`` a dict value (``{key}`` its
key), ``<list>`` the list arm of a union, ``[0]`` a tuple item, ``.name`` a
TypedDict entry (see :mod:`reference_codec.type_tree`). Structs, dataclasses
and NamedTuples have sites of their own. ``PickleWrapper`` arms are not
reachable unless ``--pickle-wrappers`` is given; a collection whose
``min_length`` is positive cannot be empty. Everything else a type admits is
reachable, so anything never seen is a gap in the strategies: the command
then exits 1.

The draws run under the loaded profile (``CI=true`` gives ``ci``: the same
examples every run) with the example count from ``--examples``, no example
database and no shrinking, across ``--jobs`` processes. Every nested struct
is also drawn ``--examples`` times on its own (its strategy is the one the
messages use), since some are reached only through a rare branch of one
message type.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

import msgspec
from msgspec import inspect as mi

from reference_codec import type_tree
from reference_codec.type_tree import ARM, FIELD, INDEX, ITEM, KEY, MAPPING_TYPES, STRUCT_TYPES, MappingType, Step, children, struct_info, unwrap

__all__ = ["Site", "expected_sites", "reachable_structs", "observe", "collect", "run_coverage", "CoverageReport", "main"]

Key = Tuple[str, str]  # (struct name, position)
Observation = Tuple[str, str, str]  # (struct name, position, label)

NONE, VALUE, EMPTY, FULL = "none", "value", "empty", "full"


@dataclass(frozen=True)
class Site:
    """One position of a struct's type and the labels a full run must observe there."""

    owner: str
    position: str
    labels: FrozenSet[str]


def _arm_label(t: mi.Type) -> str:
    t = unwrap(t)
    if isinstance(t, (*STRUCT_TYPES, mi.TypedDictType, mi.EnumType, mi.CustomType)):
        return t.cls.__name__
    names = {
        mi.IntType: "int", mi.FloatType: "float", mi.StrType: "str", mi.BoolType: "bool",
        mi.BytesType: "bytes", mi.ByteArrayType: "bytearray", mi.ListType: "list", mi.DictType: "dict",
        mi.TupleType: "tuple", mi.VarTupleType: "tuple", mi.SetType: "set", mi.FrozenSetType: "frozenset",
        mi.LiteralType: "literal", mi.AnyType: "any",
    }
    return names.get(type(t), type(t).__name__)


def _collection_labels(t: Union[mi.CollectionType, MappingType]) -> FrozenSet[str]:
    labels = set()
    if not t.min_length:
        labels.add(EMPTY)
    if t.max_length is None or t.max_length > 0:
        labels.add(FULL)
    return frozenset(labels)


def _follow(pickle_wrappers: bool) -> type_tree.Follow:
    """Which children a coverage walk goes on to: every one but a pickle carrier arm, unless ``pickle_wrappers``."""
    from .builder import is_pickle_carrier

    def follow(step: Step, child: mi.Type) -> bool:
        return pickle_wrappers or not (step.kind == ARM and isinstance(child, mi.StructType) and is_pickle_carrier(child.cls))

    return follow


def expected_sites(roots: Iterable[type], *, pickle_wrappers: bool = False) -> Dict[Key, Site]:
    """Every site of ``roots`` and of the structs reachable from them, with its expected labels."""
    from .builder import union_arms

    sites: Dict[Key, Site] = {}

    def add(owner: str, position: str, labels: Iterable[str]) -> None:
        labels = frozenset(labels)
        if not labels:
            return
        key = (owner, position)
        old = sites.get(key)
        sites[key] = Site(owner, position, labels | (old.labels if old else frozenset()))

    def walk(t: mi.Type, owner: str, position: str) -> None:
        t = unwrap(t)
        if isinstance(t, STRUCT_TYPES):
            return  # its fields are sites of its own
        if isinstance(t, mi.UnionType):
            has_none, arms = union_arms(t, pickle_wrappers=pickle_wrappers)
            labels = {NONE, VALUE} if has_none and arms else set()
            if len(arms) > 1:
                labels |= {f"arm:{_arm_label(a)}" for a in arms}
            add(owner, position, labels)
            for arm in arms:
                walk(arm, owner, position + (f"<{_arm_label(arm)}>" if len(arms) > 1 else ""))
            return
        if isinstance(t, mi.CollectionType) or isinstance(t, MAPPING_TYPES):
            add(owner, position, _collection_labels(t))
        for step, child in children(t):
            walk(child, owner, position + str(step))

    for cls in reachable_structs(roots, pickle_wrappers=pickle_wrappers):
        for f in struct_info(cls).fields:
            walk(f.type, cls.__name__, f.name)
    return sites


def reachable_structs(roots: Iterable[type], *, pickle_wrappers: bool = False) -> List[type]:
    """``roots`` and every struct class reachable from them, in discovery order (see :func:`reference_codec.type_tree.reachable_structs`)."""
    return type_tree.reachable_structs(roots, follow=_follow(pickle_wrappers))


def _matches(value: object, t: mi.Type) -> bool:
    t = unwrap(t)
    if isinstance(t, mi.LiteralType):
        return any(type(value) is type(v) and value == v for v in t.values)
    if isinstance(t, mi.BoolType):
        return type(value) is bool
    if isinstance(t, mi.IntType):
        return isinstance(value, int) and not isinstance(value, bool)
    simple = {
        mi.FloatType: float, mi.StrType: str, mi.BytesType: bytes, mi.ByteArrayType: bytearray,
        mi.ListType: list, mi.DictType: dict, mi.TupleType: tuple, mi.VarTupleType: tuple,
        mi.SetType: set, mi.FrozenSetType: frozenset, mi.NoneType: type(None),
    }
    if type(t) in simple:
        return isinstance(value, simple[type(t)])
    if isinstance(t, STRUCT_TYPES):
        return type(value) is t.cls
    if isinstance(t, mi.TypedDictType):
        return isinstance(value, dict)
    if isinstance(t, (mi.EnumType, mi.CustomType)):
        return isinstance(value, t.cls)
    return isinstance(t, mi.AnyType)


def observe(value: msgspec.Struct, record: Set[Observation], *, pickle_wrappers: bool = False) -> None:
    """Add to ``record`` every label ``value`` (a struct) shows at its sites and its nested structs'."""
    from .builder import union_arms

    def walk(v: Any, t: mi.Type, owner: str, position: str) -> None:
        t = unwrap(t)
        if isinstance(t, mi.UnionType):
            has_none, arms = union_arms(t, pickle_wrappers=pickle_wrappers)
            if v is None:
                record.add((owner, position, NONE))
                return
            if has_none:
                record.add((owner, position, VALUE))
            arm = next((a for a in arms if not isinstance(a, mi.CustomType) and _matches(v, a)), None)
            if arm is None:
                arm = next((a for a in arms if _matches(v, a)), None)
            if arm is None:
                return
            if len(arms) > 1:
                record.add((owner, position, f"arm:{_arm_label(arm)}"))
                position += f"<{_arm_label(arm)}>"
            walk(v, arm, owner, position)
            return
        if isinstance(t, STRUCT_TYPES):
            if isinstance(v, t.cls):
                struct(v)
            return
        if isinstance(t, mi.CollectionType) or isinstance(t, MAPPING_TYPES):
            record.add((owner, position, FULL if len(v) else EMPTY))
        for step, child in children(t):
            for item in _values_at(v, step):
                walk(item, child, owner, position + str(step))

    def struct(v: Any) -> None:
        cls = type(v)
        for f in struct_info(cls).fields:
            walk(getattr(v, f.name), f.type, cls.__name__, f.name)

    struct(value)


def _values_at(value: Any, step: Step) -> Iterable[Any]:
    """The values of ``value`` (a collection, mapping, fixed tuple or TypedDict) at ``step``."""
    if step.kind == ITEM:
        return value
    if step.kind == KEY:
        return value.keys()
    if step.kind == INDEX:
        assert isinstance(step.at, int)
        return value[step.at : step.at + 1]
    if step.kind == FIELD:
        return [value[step.at]] if step.at in value else []
    return value.values()


def collect(classes: Sequence[type], examples: int, pickle_wrappers: bool = False) -> Tuple[Set[Observation], Dict[str, int]]:
    """Draw ``examples`` instances of each struct class; return observations and draws per class name."""
    from hypothesis import Phase, given, settings

    from .reference import reference_struct

    record: Set[Observation] = set()
    drawn: Dict[str, int] = {}
    for cls in classes:
        name = cls.__name__
        count = [0]

        @settings(settings.default, max_examples=examples, database=None, phases=(Phase.generate,), deadline=None)
        @given(reference_struct(cls, pickle_wrappers=pickle_wrappers))
        def run(msg):
            count[0] += 1
            observe(msg, record, pickle_wrappers=pickle_wrappers)

        run()
        drawn[name] = count[0]
    return record, drawn


def _collect_job(args) -> Tuple[Set[Observation], Dict[str, int]]:
    import torch

    import strategies

    strategies.load_profile()  # a fresh process: load what the parent's environment selects
    strategies.register_type_strategies()

    # Tensors here are tiny: torch's intra-op threads only compete with the
    # other worker processes for the same cores.
    torch.set_num_threads(1)
    return collect(*args)


@dataclass
class CoverageReport:
    """Expected sites, what was observed, and the gaps."""

    sites: Dict[Key, Site]
    observed: Set[Observation]
    drawn: Dict[str, int]
    message_names: Tuple[str, ...]

    def missing(self, site: Site) -> FrozenSet[str]:
        return frozenset(label for label in site.labels if (site.owner, site.position, label) not in self.observed)

    @property
    def gaps(self) -> List[Tuple[Site, FrozenSet[str]]]:
        return [(s, m) for s in self.sites.values() for m in [self.missing(s)] if m]

    @property
    def expected_count(self) -> int:
        return sum(len(s.labels) for s in self.sites.values())

    def render(self, *, only_missing: bool = False, ascii_only: bool = False) -> str:
        yes, no, na = ("+", "X", ".") if ascii_only else ("✓", "✗", "·")
        width = max([len(s.position) for s in self.sites.values()] + [24]) + 2
        header = f"  {'field':<{width}}{'None':>5}{'value':>6}{'empty':>6}{'full':>5}  arms"
        lines: List[str] = [
            f"{yes} seen   {no} never generated   {na} not applicable;  arms: union arms, {no} after one never generated"
        ]
        owners: Dict[str, List[Site]] = {}
        for site in self.sites.values():
            owners.setdefault(site.owner, []).append(site)
        order = list(self.message_names) + sorted(set(owners) - set(self.message_names))
        for owner in order:
            rows = owners.get(owner, [])
            if only_missing:
                rows = [s for s in rows if self.missing(s)]
            if not rows:
                continue
            if owner in self.message_names:
                kind = f"{self.drawn.get(owner, 0)} drawn"
            else:
                kind = f"nested; {self.drawn.get(owner, 0)} drawn on its own"
            lines.append(f"{owner} ({kind})")
            lines.append(header)
            for site in rows:
                gone = self.missing(site)

                def cell(label: str, w: int) -> str:
                    mark = na if label not in site.labels else (no if label in gone else yes)
                    return f"{mark:>{w}}"

                arms = sorted(lab[4:] for lab in site.labels if lab.startswith("arm:"))
                arm_text = " ".join(f"{a}{no if 'arm:' + a in gone else ''}" for a in arms) if arms else ""
                lines.append(
                    f"  {site.position:<{width}}{cell(NONE, 5)}{cell(VALUE, 6)}{cell(EMPTY, 6)}{cell(FULL, 5)}  {arm_text}".rstrip()
                )
        return "\n".join(lines) if len(lines) > 1 else ""

    def summary(self, examples: int, seconds: float) -> str:
        gaps = self.gaps
        missing = sum(len(m) for _, m in gaps)
        seen = self.expected_count - missing
        owners = {s.owner for s in self.sites.values()}
        verdict = "OK" if not gaps else f"FAIL: {len(gaps)} site(s) with gaps: " + ", ".join(
            f"{s.owner}.{s.position} {sorted(m)}" for s, m in gaps[:5]
        ) + (" ..." if len(gaps) > 5 else "")
        return (
            f"coverage: {seen}/{self.expected_count} variants seen at {len(self.sites)} sites "
            f"({len(self.message_names)} message types, {len(owners - set(self.message_names))} nested structs), "
            f"{examples} examples per type, {seconds:.1f}s - {verdict}"
        )


def run_coverage(
    examples: int, *, types: Optional[Sequence[str]] = None, jobs: int = 1, pickle_wrappers: bool = False
) -> CoverageReport:
    """Draw and observe; ``jobs > 1`` spreads message types over processes."""
    from reference_codec.schema import MESSAGE_TYPES

    names = tuple(types) if types else tuple(MESSAGE_TYPES)
    roots = [MESSAGE_TYPES[n] for n in names]
    sites = expected_sites(roots, pickle_wrappers=pickle_wrappers)
    # Nested structs are drawn inside the messages and also on their own: one
    # reached only through a dict value of one message type (LoRARef) would
    # otherwise see a small fraction of the examples.
    nested = [cls for cls in reachable_structs(roots, pickle_wrappers=pickle_wrappers) if cls not in roots]
    # Most sites first (a rough measure of cost), handed out one class at a
    # time, so that no worker is left with the heavy batch messages at the end.
    ordered = sorted([*roots, *nested], key=lambda cls: -len(expected_sites([cls])))
    observed: Set[Observation] = set()
    drawn: Dict[str, int] = {}
    if jobs <= 1 or len(ordered) <= 1:
        observed, drawn = collect(ordered, examples, pickle_wrappers)
    else:
        context = multiprocessing.get_context("spawn")  # no fork of a process that has imported torch
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            tasks = [((cls,), examples, pickle_wrappers) for cls in ordered]
            for obs, counts in pool.map(_collect_job, tasks, chunksize=1):
                observed |= obs
                drawn.update(counts)
    return CoverageReport(sites, observed, drawn, names)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m strategies.coverage",
        description="Draw N examples of every message type and report which variants were never generated.",
    )
    parser.add_argument("--examples", type=int, default=100, metavar="N", help="examples per message type (default 100)")
    parser.add_argument("--types", default="", help="comma-separated wire tags to check (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    parser.add_argument("--pickle-wrappers", action="store_true", help="also generate and require PickleWrapper arms")
    parser.add_argument("--missing-only", action="store_true", help="print only fields with gaps")
    parser.add_argument("--quiet", action="store_true", help="print only the summary line")
    args = parser.parse_args(argv)

    import strategies
    from reference_codec.schema import MESSAGE_TYPES

    strategies.load_profile()
    strategies.register_type_strategies()

    if args.examples < 1:
        parser.error(f"--examples must be >= 1, got {args.examples}")
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    unknown = [t for t in types if t not in MESSAGE_TYPES]
    if unknown:
        parser.error(f"--types has unknown wire tags: {', '.join(unknown)}")

    start = time.perf_counter()
    report = run_coverage(args.examples, types=types or None, jobs=args.jobs, pickle_wrappers=args.pickle_wrappers)
    elapsed = time.perf_counter() - start
    ascii_only = not _can_print("✓✗·")
    if not args.quiet:
        table = report.render(only_missing=args.missing_only, ascii_only=ascii_only)
        if table:
            print(table)
    print(report.summary(args.examples, elapsed))
    return 1 if report.gaps else 0


def _can_print(text: str) -> bool:
    try:
        text.encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
