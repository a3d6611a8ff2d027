"""Where a measurement comes from: the commit and the machine, for the line above every generated table."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess

__all__ = ["commit", "cpu", "header"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def commit() -> str:
    """This checkout's short commit, marked when tracked files have uncommitted changes."""
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
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
