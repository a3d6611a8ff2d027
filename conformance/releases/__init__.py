"""Per-release environments: every published release of an engine installed once, on a CPU machine, for schema snapshots.

See :mod:`conformance.releases.environments` for how one is built, and
``python -m conformance.releases envs --engine NAME --check`` to build and
check them all.
"""

from .environments import (
    CACHE_ENV,
    MARKER,
    STEPS,
    SUITE_REQUIREMENTS,
    ReleaseEnvironmentError,
    cache_root,
    environment,
    environment_path,
    installed,
    project_links,
    python_in,
    run_in_environment,
    with_pins,
)

__all__ = [
    "CACHE_ENV",
    "MARKER",
    "STEPS",
    "SUITE_REQUIREMENTS",
    "ReleaseEnvironmentError",
    "cache_root",
    "environment",
    "environment_path",
    "installed",
    "project_links",
    "python_in",
    "run_in_environment",
    "with_pins",
]
