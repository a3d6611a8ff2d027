"""These tests draw with the strategies: the profile the environment selects and ``st.from_type`` for the reference schema."""

from strategies.pytest_plugin import pytest_configure  # noqa: F401 - pytest calls it for this conftest
