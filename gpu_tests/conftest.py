"""GPU tests skip, with a reason that says so, where CUDA is absent."""

from __future__ import annotations

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="CUDA is not available on this machine (torch.cuda.is_available() is False)")
    for item in items:
        item.add_marker(skip)
