"""pytest plugin for test runs that draw with these strategies: the profile, and ``st.from_type`` for the reference schema.

At configure time it loads the Hypothesis profile the environment selects
(:func:`strategies.profiles.load_profile`: ``ci`` under ``CI=true``) and
registers ``st.from_type`` for the reference schema's types
(:func:`strategies.messages.register_type_strategies`). This repository's
tests import its hook in each test folder's ``conftest.py`` (``-p`` or
``addopts`` would import this package before pytest puts the source tree on
``sys.path``, and a tox run would then test the installed copy against the
source tree's test files: "import file mismatch"); another project's tests
may enable it with ``-p strategies.pytest_plugin``.
"""

from __future__ import annotations

__all__ = ["pytest_configure"]


def pytest_configure(config) -> None:
    from .messages import register_type_strategies
    from .profiles import load_profile

    load_profile()
    register_type_strategies()
