"""pytest plugin for test runs that draw with these strategies: the profile, and ``st.from_type`` for the reference schema.

At configure time it loads the Hypothesis profile the environment selects
(:func:`strategies.profiles.load_profile`: ``ci`` under ``CI=true``) and
registers ``st.from_type`` for the reference schema's types
(:func:`strategies.messages.register_type_strategies`). This repository's
tests enable it in ``pyproject.toml`` (``addopts = -p strategies.pytest_plugin``);
another project's tests enable it with ``-p strategies.pytest_plugin``.
"""

from __future__ import annotations

__all__ = ["pytest_configure"]


def pytest_configure(config) -> None:
    from .messages import register_type_strategies
    from .profiles import load_profile

    load_profile()
    register_type_strategies()
