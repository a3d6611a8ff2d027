"""GPU tests skip, with a reason that says so, where CUDA is absent; they draw with the strategies' profile."""

from __future__ import annotations

import pathlib

import pytest
import torch

from strategies.pytest_plugin import pytest_configure  # noqa: F401 - the profile and st.from_type, as the other test folders


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="CUDA is not available on this machine (torch.cuda.is_available() is False)")
    here = pathlib.Path(__file__).parent
    for item in items:
        # This hook sees every collected item, not only this folder's.
        if here in pathlib.Path(str(item.path)).parents:
            item.add_marker(skip)
