"""A Rust router's serde decoder of vLLM's KV events against vLLM 0.34.0's own codec, in both directions.

``examples/kv-events-rust`` decodes ``KVEventBatch`` the way a router does
(serde structs mirroring vLLM's, ``rmp_serde::from_slice``) and answers the
engine-neutral operations (``conformance/PROTOCOL.md`` §9); vLLM's side is
:mod:`conformance.releases.host` in vLLM's own environment. The driver
(:func:`~conformance.releases.confirm.confirm_messages`) draws batches from
vLLM 0.34.0's schema snapshot and sends them one way and the other; hand-made
frames probe what the draws do not reach. Every disagreement found is written
down in ``docs/findings/rust-kv-events.md``; the expectations here are that
list, so a disagreement that appears, disappears or changes fails the test.

What it needs, and what it skips without:

* vLLM 0.34.0: the Python running the test (``tox -e rust-consumer``), or
  the one named by ``IPC_CONFORMANCE_VLLM_PYTHON``; skipped when that Python
  cannot import ``vllm.distributed.kv_events`` or has another release.
* The binary: ``examples/kv-events-rust/target/release/kv-events-rust``
  (under ``$CARGO_TARGET_DIR`` when set), or ``IPC_CONFORMANCE_RUST_KV_EVENTS``.
  ``tox -e rust-consumer`` builds it before the test. The test builds it only
  when it is missing or older than its sources and ``cargo`` is on the path
  (``cargo build --release --offline --locked``, about 12 s from clean on two
  cores, 3 s after an edit); a failed build (no Debian crates) is a skip with
  cargo's last lines. A named binary is never rebuilt.
* The optional check against vLLM 0.23.0 runs only where the release
  history's cached environment of 0.23.0 exists
  (``$IPC_CONFORMANCE_RELEASES_CACHE`` or ``~/.cache/ipc-conformance/releases``).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from typing import Any, Dict, Iterator, Optional, Tuple

import msgspec
import pytest

from conformance.releases.confirm import HostProcess, confirm_messages
from conformance.releases.values import differences
from conformance.schema_diff.snapshot import Snapshot, TypeNode, load

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(ROOT, "examples", "kv-events-rust")
RELEASE = "0.34.0"
FAMILY, MESSAGE = "kv-events", "KVEventBatch"

# --- the two sides -------------------------------------------------------------------------


def _vllm_python() -> Tuple[str, str]:
    python = os.environ.get("IPC_CONFORMANCE_VLLM_PYTHON") or sys.executable
    probe = subprocess.run(
        [python, "-c", "import vllm.distributed.kv_events; from importlib import metadata; print(metadata.version('vllm'))"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"{python} cannot import vllm.distributed.kv_events ({last}); run tox -e rust-consumer or set IPC_CONFORMANCE_VLLM_PYTHON")
    version = probe.stdout.strip()
    if version != RELEASE:
        pytest.skip(f"{python} has vLLM {version}; the expectations here are vLLM {RELEASE}'s")
    return python, version


def _sources_mtime() -> float:
    paths = [os.path.join(EXAMPLE, name) for name in ("Cargo.toml", "Cargo.lock")]
    paths += [os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(EXAMPLE, "src")) for name in names]
    return max(os.path.getmtime(p) for p in paths)


def _rust_binary() -> str:
    named = os.environ.get("IPC_CONFORMANCE_RUST_KV_EVENTS")
    if named:
        if not os.access(named, os.X_OK):
            pytest.skip(f"IPC_CONFORMANCE_RUST_KV_EVENTS={named} is not an executable")
        return named
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(EXAMPLE, "target")
    binary = os.path.join(target, "release", "kv-events-rust")
    fresh = os.access(binary, os.X_OK) and os.path.getmtime(binary) >= _sources_mtime()
    if fresh:
        return binary
    if shutil.which("cargo") is None:
        if os.access(binary, os.X_OK):
            return binary  # older than its sources, but nothing here can rebuild it
        pytest.skip(f"no {os.path.relpath(binary, ROOT)} and no cargo to build it (see examples/kv-events-rust/README.md)")
    build = subprocess.run(["cargo", "build", "--release", "--offline", "--locked"], cwd=EXAMPLE, capture_output=True, text=True, timeout=900)
    if build.returncode != 0:
        tail = " | ".join(build.stderr.strip().splitlines()[-3:])
        pytest.skip(f"cargo build --release --offline failed (Debian's librust-*-dev crates installed?): {tail}")
    return binary


@pytest.fixture(scope="module")
def vllm() -> Tuple[str, str]:
    return _vllm_python()


@pytest.fixture(scope="module")
def snapshot(vllm, tmp_path_factory) -> Snapshot:
    """vLLM 0.34.0's kv-events schema, taken from the installed release."""
    python, version = vllm
    out = str(tmp_path_factory.mktemp("snapshot") / f"vllm-kv-{version}.json")
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    taken = subprocess.run(
        [python, "-m", "conformance.schema_diff", "snapshot", "--engine", "vllm", "--family", FAMILY, "--release", version, "--out", out],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert taken.returncode == 0, taken.stderr
    return load(out)


@pytest.fixture(scope="module")
def vllm_host(vllm) -> Iterator[HostProcess]:
    with HostProcess(vllm[0], "vllm", FAMILY) as host:
        yield host


@pytest.fixture(scope="module")
def rust_host() -> Iterator[HostProcess]:
    with HostProcess(argv=[_rust_binary()]) as host:
        yield host


# --- the integer ranges of the Rust structs (examples/kv-events-rust/src/main.rs) ----------

U32, U64, I32 = (0, 2**32 - 1), (0, 2**64 - 1), (-(2**31), 2**31 - 1)
RUST_RANGES = {
    ("KVEventBatch", "data_parallel_rank"): I32,
    ("BlockStored", "block_hashes"): U64,
    ("BlockStored", "parent_block_hash"): U64,
    ("BlockStored", "token_ids"): U32,
    ("BlockStored", "block_size"): U32,
    ("BlockStored", "lora_id"): U64,
    ("BlockStored", "group_idx"): U32,
    ("BlockStored", "kv_cache_spec_sliding_window"): U32,
    ("BlockStored", "lookahead_token_ids"): U32,
    ("BlockRemoved", "block_hashes"): U64,
    ("BlockRemoved", "group_idx"): U32,
}
#: What serde says when a vLLM int is outside the Rust field's range (finding 1).
RANGE_REFUSAL = re.compile(r"invalid value: integer `-?\d+`, expected (u32|u64|i32)|data did not match any variant of untagged enum BlockHash")


def _narrowed(snapshot: Snapshot) -> Snapshot:
    """The snapshot with every int field bounded to the Rust field's range: what vLLM's own producers send."""

    def bound(node: TypeNode, lo: int, hi: int) -> None:
        if node.kind == "int":
            node.constraints = dict(node.constraints, ge=lo, le=hi)
        for child in (node.item, node.key, node.value, *(node.types or ()), *(node.items or ())):
            if child is not None:
                bound(child, lo, hi)

    narrowed = msgspec.json.decode(msgspec.json.encode(snapshot), type=Snapshot)
    for record in narrowed.structs.values():
        for field in record.fields:
            if (record.name, field.name) in RUST_RANGES:
                bound(field.type, *RUST_RANGES[(record.name, field.name)])
    return narrowed


# --- the tests -----------------------------------------------------------------------------


def test_hello_names_the_rmp_serde_of_cargo_lock(rust_host):
    with open(os.path.join(EXAMPLE, "Cargo.lock"), encoding="utf-8") as fh:
        locked = re.search(r'name = "rmp-serde"\nversion = "([^"]+)"', fh.read())
    assert locked is not None
    assert rust_host.name == f"rust-kv-events (rmp-serde {locked.group(1)})"
    assert rust_host.messages == {MESSAGE}
    assert rust_host.call("encode_value", type="EngineCoreRequest", value=[])["error_kind"] == "unsupported"
    assert rust_host.call("no_such_op")["error_kind"] == "unsupported"


def test_vllm_to_rust_refuses_only_integers_outside_the_rust_types_and_rust_to_vllm_reads_every_draw(snapshot, vllm_host, rust_host):
    """Finding 1: vLLM declares plain ``int`` (-2**63 .. 2**64-1); the router's u32/u64/i32 refuse the rest."""
    observations = confirm_messages(FAMILY, [MESSAGE], {"old": snapshot, "new": snapshot}, {"old": vllm_host, "new": rust_host}, max_examples=60)
    seen = {o.direction: o for o in observations}
    backward, forward = seen["backward"], seen["forward"]  # old = vLLM, new = Rust: backward is vLLM -> Rust
    assert backward.outcome == "refuses" and RANGE_REFUSAL.fullmatch(backward.detail), backward
    assert forward.outcome == "ok", forward  # what the Rust structs accept, vLLM reads as written


def test_within_the_rust_integer_ranges_both_directions_agree(snapshot, vllm_host, rust_host):
    narrowed = _narrowed(snapshot)
    observations = confirm_messages(FAMILY, [MESSAGE], {"old": narrowed, "new": narrowed}, {"old": vllm_host, "new": rust_host}, max_examples=60)
    assert [(o.direction, o.outcome) for o in observations] == [("backward", "ok"), ("forward", "ok")], observations


# Hand-made frames, each decoded by both: (vLLM, Rust) outcome, and for a frame only Rust reads, what it reads.
_enc = msgspec.msgpack.encode
_STORED = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None, "token_ids": [1], "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None}
_OMIT = object()


def _stored(**fields: Any) -> Dict[str, Any]:
    event = {**_STORED, **fields}
    return {k: v for k, v in event.items() if v is not _OMIT}


def _map(pairs) -> bytes:  # a msgpack map written key by key, so a key may repeat or come last
    return bytes([0x80 | len(pairs)]) + b"".join(_enc(k) + _enc(v) for k, v in pairs)


def _batch_of(event: bytes) -> bytes:
    return b"\x92\xcb" + struct.pack(">d", 1.0) + b"\x91" + event


READS, REFUSES = "reads", "refuses"
PROBES: Dict[str, Tuple[bytes, str, str, Optional[Tuple[str, Any]]]] = {
    # finding 1: integer ranges
    "hash-negative": (_enc([1.0, [_stored(block_hashes=[-1])]]), READS, REFUSES, None),
    "token-id-negative": (_enc([1.0, [_stored(token_ids=[-1])]]), READS, REFUSES, None),
    "rank-over-i32": (_enc([1.0, [], 2**31]), READS, REFUSES, None),
    # finding 2: a tail field appended to the batch
    "batch-of-4": (_enc([1.0, [], None, "appended"]), READS, REFUSES, None),
    # finding 3: serde's lenient readings
    "hash-as-str": (_enc([1.0, [_stored(block_hashes=["ab"])]]), REFUSES, READS, ("block_hashes", [b"ab"])),
    "hash-as-array": (_enc([1.0, [_stored(block_hashes=[[1, 2]])]]), REFUSES, READS, ("block_hashes", [b"\x01\x02"])),
    "required-nullable-missing": (_enc([1.0, [_stored(lora_id=_OMIT)]]), REFUSES, READS, ("lora_id", None)),
    "trailing-bytes": (_enc([1.0, [_stored()]]) + b"\xc0", REFUSES, READS, ("block_hashes", [1])),
    "event-positional-0.23": (_enc([1.0, [["BlockStored", [1], None, [1], 16, None, "GPU", None]]]), REFUSES, READS, ("medium", "GPU")),
    # finding 4: a repeated key
    "duplicate-key": (_batch_of(_map([*_STORED.items(), ("medium", "CPU")])), READS, REFUSES, None),
    # agreements
    "hash-u64-max": (_enc([1.0, [_stored(block_hashes=[2**64 - 1], parent_block_hash=2**63)]]), READS, READS, None),
    "hash-bytes": (_enc([1.0, [_stored(block_hashes=[b"\x00" * 32], parent_block_hash=b"\x01" * 32)]]), READS, READS, None),
    "hash-float": (_enc([1.0, [_stored(block_hashes=[1.0])]]), REFUSES, REFUSES, None),
    "batch-of-2": (_enc([1.0, []]), READS, READS, None),
    "batch-as-map": (_enc({"ts": 1.0, "events": []}), REFUSES, REFUSES, None),
    "ts-int": (_enc([1, []]), READS, READS, None),
    "ts-float32": (b"\x92\xca" + struct.pack(">f", 1.5) + b"\x90", READS, READS, None),
    "ts-nan": (_enc([float("nan"), []]), READS, READS, None),
    "ts-str": (_enc(["1", []]), REFUSES, REFUSES, None),
    "optional-as-nil": (_enc([1.0, [_stored(group_idx=None, session_id=None)]]), READS, READS, None),
    "unknown-field": (_enc([1.0, [_stored(future_field=[1, {"a": 2}])]]), READS, READS, None),
    "cleared-with-a-field": (_enc([1.0, [{"type": "AllBlocksCleared", "x": 1}]]), READS, READS, None),
    "tag-last": (_batch_of(_map([*[(k, v) for k, v in _STORED.items() if k != "type"], ("type", "BlockStored")])), READS, READS, None),
    "tag-unknown": (_enc([1.0, [{"type": "BlockMoved", "block_hashes": [1]}]]), REFUSES, REFUSES, None),
    "tag-missing": (_enc([1.0, [_stored(type=_OMIT)]]), REFUSES, REFUSES, None),
    "required-missing": (_enc([1.0, [_stored(block_size=_OMIT)]]), REFUSES, REFUSES, None),
    "block-size-bool": (_enc([1.0, [_stored(block_size=True)]]), REFUSES, REFUSES, None),
    "block-size-float": (_enc([1.0, [_stored(block_size=16.0)]]), REFUSES, REFUSES, None),
    "medium-bad-utf8": (_enc([1.0, [_stored(medium="x")]]).replace(b"\xa6medium\xa1x", b"\xa6medium\xa1\xff"), REFUSES, REFUSES, None),
    "extra-keys-untyped": (_enc([1.0, [_stored(extra_keys=[["lora", 1, b"x", None, [2]], None])]]), READS, READS, None),
    "empty-frame": (b"", REFUSES, REFUSES, None),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_hand_made_frame_is_read_or_refused_as_documented(name, vllm_host, rust_host):
    frame, vllm_expected, rust_expected, rust_reading = PROBES[name]
    theirs = vllm_host.call("decode_value", type=MESSAGE, frames=[frame])
    ours = rust_host.call("decode_value", type=MESSAGE, frames=[frame])
    for side, answer in (("vLLM", theirs), ("Rust", ours)):
        assert answer["ok"] or answer["error_kind"] == "decode_error", (side, answer)
    got = (READS if theirs["ok"] else REFUSES, READS if ours["ok"] else REFUSES)
    assert got == (vllm_expected, rust_expected), (theirs, ours)
    if got == (READS, READS):
        assert differences(theirs["value"], ours["value"]) == []
    elif rust_reading is not None:  # what Rust makes of a frame vLLM refuses
        field, value = rust_reading
        assert ours["value"]["events"][0][field] == value, ours


def test_rust_writes_nil_where_vllm_omits_and_vllm_reads_it(vllm_host, rust_host):
    """Values agree, bytes do not: in an event rmp-serde writes a ``None`` tail field as nil, vLLM (``omit_defaults``) leaves it out.

    Both write the batch's ``data_parallel_rank`` (msgspec does not omit the
    defaults of an ``array_like`` struct).
    """
    value = [1.0, [_stored(block_hashes=[2**64 - 1, b"\x00" * 32])]]
    ours, theirs = rust_host.call("encode_value", type=MESSAGE, value=value), vllm_host.call("encode_value", type=MESSAGE, value=value)
    assert ours["ok"] and theirs["ok"], (ours, theirs)
    assert ours["frames"] != theirs["frames"]
    (_, [our_event], our_rank), (_, [their_event], their_rank) = (msgspec.msgpack.decode(x["frames"][0]) for x in (ours, theirs))
    assert our_rank is None and their_rank is None
    assert (len(our_event), len(their_event)) == (16, 8), (our_event, their_event)
    read = vllm_host.call("decode_value", type=MESSAGE, frames=ours["frames"])
    assert read["ok"] and differences(ours["value"], read["value"]) == [] and differences(theirs["value"], read["value"]) == []


def _release_python(version: str) -> Optional[str]:
    cache = os.environ.get("IPC_CONFORMANCE_RELEASES_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ipc-conformance", "releases")
    python = os.path.join(cache, f"vllm-{version}", "bin", "python")
    return python if os.access(python, os.X_OK) else None


def test_vllm_0_23_positional_events_are_read_by_the_serde_enum_but_not_the_reverse(snapshot, rust_host, tmp_path):
    """Finding 5: 0.23.0 wrote events as ``[tag, field, ...]`` arrays; serde's internally tagged enum reads them too."""
    old_python = _release_python("0.23.0")
    if old_python is None:
        pytest.skip("no cached environment of vLLM 0.23.0 (python -m conformance.releases history builds one)")
    out = str(tmp_path / "vllm-kv-0.23.0.json")
    env = dict(os.environ, PYTHONPATH=ROOT)
    taken = subprocess.run([old_python, "-m", "conformance.schema_diff", "snapshot", "--engine", "vllm", "--family", FAMILY, "--release", "0.23.0", "--out", out], capture_output=True, text=True, env=env, timeout=300)
    if taken.returncode != 0:
        pytest.skip(f"the cached vLLM 0.23.0 cannot take a kv-events snapshot: {taken.stderr.strip()[-200:]}")
    old = _narrowed(load(out))
    with HostProcess(old_python, "vllm", FAMILY) as old_host:
        observations = confirm_messages(FAMILY, [MESSAGE], {"old": old, "new": _narrowed(snapshot)}, {"old": old_host, "new": rust_host}, max_examples=40)
    seen = {o.direction: o for o in observations}
    assert seen["backward"].outcome == "ok", seen["backward"]  # 0.23.0 -> Rust
    assert seen["forward"].outcome == "refuses" and "Expected `array`, got `object`" in seen["forward"].detail, seen["forward"]
