"""How a run names its tests and its selection: short test ids, (property, case) pairs and the command that reruns it.

Shared by the runner's plugins (report, failure list, seeding, shrinking), so
none of them imports another for these.
"""

from __future__ import annotations

import os
import shlex
from typing import Tuple

from ..engines import DEFAULT_ENGINE, engine_spec_from_environment
from ..plugin import CODEC_ENV, TESTEE_ENV

__all__ = ["short_id", "property_and_case", "run_selector", "display_path"]


def short_id(nodeid: str) -> str:
    """A node id without directories: ``test_x.py::test_y[param]``."""
    path, sep, rest = nodeid.partition("::")
    return os.path.basename(path) + sep + rest


def property_and_case(nodeid: str) -> Tuple[str, str]:
    """``(property, case)`` of a node id: the function name and its parameter id (``-`` for none)."""
    name = nodeid.partition("::")[2]
    prop, _, rest = name.partition("[")
    return prop, (rest[:-1] if rest.endswith("]") else rest) or "-"


def run_selector() -> str:
    """The options that select this run's engine and implementation, as a command line writes them."""
    if os.environ.get(TESTEE_ENV):
        selector = f"--testee {shlex.quote(os.environ[TESTEE_ENV])}"
    else:
        selector = f"--codec {shlex.quote(os.environ.get(CODEC_ENV, '?'))}"
    engine = engine_spec_from_environment()
    if engine != DEFAULT_ENGINE:
        selector = f"--engine {shlex.quote(engine)} {selector}"
    return selector


def display_path(path: str) -> str:
    """``path`` relative to the current directory where it is below it, else as given."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
