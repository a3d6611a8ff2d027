"""A large body decodes with Python's cyclic collector paused, and the collector is always given back as it was.

Observed through ``gc.callbacks`` with a collection threshold low enough that
any decode allocating lists would run collections: not timed.
"""

from __future__ import annotations

import gc
from typing import Iterator, List

import pytest

from reference_codec import DecodeError, ReferenceCodec
from reference_codec.codec import PAUSE_GC_BYTES
from reference_codec.samples import batch_token_id_output


@pytest.fixture
def collections() -> Iterator[List[str]]:
    """The collections that start while the test runs, with a threshold of 10 new containers."""
    started: List[str] = []

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(f"generation {info['generation']}")

    threshold = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.enable()
    gc.set_threshold(10)
    gc.callbacks.append(record)
    try:
        yield started
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*threshold)
        (gc.enable if was_enabled else gc.disable)()


def _large_body() -> bytes:
    body = ReferenceCodec().encode(batch_token_id_output(batch=64, seed=3))[0]
    assert len(body) >= PAUSE_GC_BYTES  # else the tests below would not test the pause
    return bytes(body)


def test_decode_of_a_large_body_runs_no_collection_and_reenables_the_collector(collections):
    codec, body = ReferenceCodec(), _large_body()
    collections.clear()  # building the codec and the body collected; the decode alone is observed
    decoded = codec.decode([body])
    assert collections == []
    assert gc.isenabled()
    assert len(decoded.rids) == 64


def test_without_the_pause_the_same_decode_runs_collections(collections):
    # the control: the observation above would see collections if the collector ran
    codec, body = ReferenceCodec(pause_gc_bytes=None), _large_body()
    collections.clear()
    codec.decode([body])
    assert collections


def test_decode_of_a_small_body_leaves_the_collector_running(collections):
    codec, body = ReferenceCodec(pause_gc_bytes=1 << 30), _large_body()
    collections.clear()
    codec.decode([body])
    assert collections


def test_a_failed_large_decode_gives_the_collector_back(collections):
    body = _large_body()
    with pytest.raises(DecodeError):
        ReferenceCodec().decode([body[:-5]])
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collections):
    gc.disable()
    ReferenceCodec().decode([_large_body()])
    assert not gc.isenabled()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "64KiB"])
def test_pause_gc_bytes_must_be_none_or_a_non_negative_int(bad):
    with pytest.raises(ValueError, match="pause_gc_bytes"):
        ReferenceCodec(pause_gc_bytes=bad)
