"""Batch sizes and per-request parallel lists.

A batch message (SGLang's ``BaseBatchReq``) carries one entry per request in
each of its parallel lists, all as long as ``rids``. Sizes are drawn as 0
(an empty batch), 1, small (2 to 8) and large (9 up to
:func:`strategies.profiles.large_batch_limit`: 64, or 256 under ``nightly``).

A large batch repeats its first :data:`DISTINCT_REQUESTS` entries (as deep
copies, so nothing is aliased) instead of drawing every one: Hypothesis caps
the data one example may draw, and a batch is large for the codec's sake
(lengths, frame counts, buffer sizes), not for variety between requests.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, List, Optional

import hypothesis.strategies as st

from ._draws import ints, lists_of
from ._public import check_int, check_strategy, named_composite
from .profiles import large_batch_limit
from .values import texts

__all__ = ["DISTINCT_REQUESTS", "SMALL_BATCH_MAX", "batch_sizes", "per_request", "request_ids", "repeat_rows"]

DISTINCT_REQUESTS = 8
SMALL_BATCH_MAX = 8
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)


def _large(limit: int) -> st.SearchStrategy[int]:
    return ints(SMALL_BATCH_MAX + 1, limit)


# Proportions 1:2:2:2. Hypothesis already favours the simplest choice (the
# first), so the empty batch, whose lists hold nothing to vary, gets the
# smallest share here.
_KINDS = st.sampled_from(("empty", "one", "one", "small", "small", "large", "large"))


@named_composite("batch_sizes")
def _batch_sizes(draw, max_size: Optional[int] = None) -> int:
    limit = large_batch_limit() if max_size is None else max_size
    kind = draw(_KINDS)
    if kind == "empty" or limit == 0:
        return 0
    if kind == "one" or limit == 1:
        return 1
    if kind == "small" or limit <= SMALL_BATCH_MAX:
        return draw(ints(2, min(limit, SMALL_BATCH_MAX)))
    return draw(_large(limit))


def batch_sizes(*, max_size: Optional[int] = None) -> st.SearchStrategy[int]:
    """Batch sizes: 0, 1, 2-8 and 9 up to ``max_size`` (default: the profile's large limit).

    Drawn in proportions 1:2:2:2, before Hypothesis' own preference for 0.

    Shrinks toward 0.
    """
    if max_size is not None:
        check_int(max_size, "max_size", min_value=0)
    return _cached_batch_sizes() if max_size is None else _cached_batch_sizes(max_size=max_size)


_cached_batch_sizes = functools.lru_cache(maxsize=None)(_batch_sizes)


def repeat_rows(distinct: List[Any], size: int) -> List[Any]:
    """``distinct`` cycled to ``size`` entries; entries past the first round are deep copies."""
    if not distinct:
        return []
    out = list(distinct[:size])
    for i in range(len(out), size):
        item = distinct[i % len(distinct)]
        out.append(item if isinstance(item, _IMMUTABLE) else copy.deepcopy(item))
    return out


@named_composite("per_request")
def _per_request(draw, items: st.SearchStrategy, size: int, distinct: int) -> List[Any]:
    first = draw(lists_of(items, min(size, distinct), min(size, distinct)))
    return repeat_rows(first, size)


_cached_per_request = functools.lru_cache(maxsize=4096)(_per_request)


def per_request(items: st.SearchStrategy, size: int, *, distinct: int = DISTINCT_REQUESTS) -> st.SearchStrategy[list]:
    """Lists of exactly ``size`` entries from ``items``; at most ``distinct`` of them drawn, the rest repeated.

    Shrinks as ``items`` does, entry by entry.
    """
    check_strategy(items, "items")
    check_int(size, "size", min_value=0)
    check_int(distinct, "distinct", min_value=1)
    return _cached_per_request(items=items, size=size, distinct=distinct)


@functools.lru_cache(maxsize=None)
def _distinct_ids(count: int) -> st.SearchStrategy[List[str]]:
    return st.lists(texts(max_size=12), min_size=count, max_size=count, unique=True)


@named_composite("request_ids")
def _request_ids(draw, size: int) -> List[str]:
    first = draw(_distinct_ids(min(size, DISTINCT_REQUESTS)))
    seen = set(first)
    out = list(first)
    for i in range(len(first), size):
        rid = f"{first[i % len(first)]}#{i}"
        while rid in seen:
            rid += "#"
        seen.add(rid)
        out.append(rid)
    return out


def request_ids(size: int) -> st.SearchStrategy[List[str]]:
    """``size`` distinct request ids (any valid text, including ``""`` once).

    Shrinks toward short ids.
    """
    check_int(size, "size", min_value=0)
    return _cached_request_ids(size=size)


_cached_request_ids = functools.lru_cache(maxsize=4096)(_request_ids)
