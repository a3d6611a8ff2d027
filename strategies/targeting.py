"""Steering generation toward large and deep messages (``hypothesis.target``).

Properties call :func:`target_size` on the message they drew. Under the
``nightly`` profile, whose phases include targeting, Hypothesis then mutates
the examples that scored highest, so the run reaches messages far larger and
more deeply nested than random generation would. Under ``ci`` (no targeting
phase) the call only records the observations.
"""

from __future__ import annotations

from array import array
from typing import NamedTuple

import msgspec
import numpy as np
import torch
from hypothesis import target

__all__ = ["MessageSize", "measure", "target_size"]

_WALK_LIMIT = 1_000_000


class MessageSize(NamedTuple):
    """How big a message is: scalar leaves, nesting depth, and payload bytes."""

    leaves: int
    depth: int
    nbytes: int


def measure(value: object) -> MessageSize:
    """Leaves (a buffer counts its elements), depth (structs and containers) and bytes of ``value``."""
    leaves = depth = nbytes = 0
    stack = [(value, 1)]
    seen = 0
    while stack and seen < _WALK_LIMIT:
        item, level = stack.pop()
        seen += 1
        depth = max(depth, level)
        if isinstance(item, msgspec.Struct):
            stack.extend((getattr(item, f), level + 1) for f in item.__struct_fields__)
        elif isinstance(item, (list, tuple, set, frozenset)) and not isinstance(item, torch.Size):
            stack.extend((v, level + 1) for v in item)
        elif isinstance(item, dict):
            for k, v in item.items():
                stack.append((k, level + 1))
                stack.append((v, level + 1))
        elif isinstance(item, torch.Tensor):
            leaves += item.numel()
            nbytes += item.numel() * item.element_size()
        elif isinstance(item, (np.ndarray, array)):
            leaves += len(item) if isinstance(item, array) else item.size
            nbytes += item.nbytes if isinstance(item, np.ndarray) else len(item) * item.itemsize
        elif isinstance(item, (str, bytes, bytearray)):
            leaves += 1
            nbytes += len(item)
        else:
            leaves += 1
            nbytes += 8
    return MessageSize(leaves, depth, nbytes)


def target_size(msg: object) -> MessageSize:
    """Report ``msg``'s size to ``hypothesis.target`` and return it; call once per example.

    Labels: ``"message leaves"``, ``"message depth"``, ``"message bytes"``.
    Must be called from inside a Hypothesis test.
    """
    size = measure(msg)
    target(float(size.leaves), label="message leaves")
    target(float(size.depth), label="message depth")
    target(float(size.nbytes), label="message bytes")
    return size
