"""Where a measurement or report comes from: the commit and the machine, for the lines above every generated table."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess

__all__ = ["commit", "cpu", "header"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: Where the tools write their tables: a change there is a measurement, not a change to what measures.
GENERATED_DIR = "docs"


def commit(root: str = ROOT) -> str:
    """The short commit of the checkout at ``root``, marked when tracked files outside ``docs/`` have uncommitted changes.

    ``docs/`` is left out because the tools write there: a sequence of runs at
    one commit (hot, then cold) would otherwise mark every table after the
    first as measured "with uncommitted changes", though the code was the
    commit's throughout.
    """
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){GENERATED_DIR}"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return rev + (" (with uncommitted changes)" if dirty else "")


def cpu() -> str:
    """The CPU's model name."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def header(how: str, command: str) -> str:
    """``Measured <how> on <cpu> (<n> cores), Python <v>, commit <c>, <now>.`` then the command, as markdown."""
    return (
        f"Measured {how} on {cpu()} ({os.cpu_count()} cores), Python {platform.python_version()}, "
        f"commit {commit()}, {datetime.datetime.now().isoformat(timespec='seconds')}.\n"
        f"Command: `{command}`\n\n"
    )
