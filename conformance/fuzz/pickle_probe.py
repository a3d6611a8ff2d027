"""Pickle payloads that prove code execution by creating a file, and the check that none was created.

A decoder that unpickles anything from the wire runs code chosen by whoever
can reach its socket. The probe payload is the smallest such program: a
protocol-0 pickle that calls ``builtins.open(path, "w")`` when loaded, so the
only trace of execution is a new file at ``path``. The fuzz harness hides these
payloads in every position of a frame and asserts, after every input, that
the file does not exist.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from typing import List, Optional

__all__ = ["PickleProbe"]


class PickleProbe:
    """Payloads that create ``self.path`` when unpickled, in every pickle protocol flavour that matters."""

    def __init__(self, directory: Optional[str] = None):
        self.directory = directory or tempfile.mkdtemp(prefix="ipc-pickle-probe-")
        self.path = os.path.join(self.directory, "code-ran")

    def payloads(self) -> List[bytes]:
        """Protocol 0 (text opcodes), protocol 2 and protocol 5 framings of ``open(path, "w")``."""
        text = f"cbuiltins\nopen\n(V{self.path}\nVw\ntR.".encode()

        class _Opens:
            def __reduce__(inner_self):  # noqa: N805 - pickle protocol hook
                return (open, (self.path, "w"))

        return [text, pickle.dumps(_Opens(), protocol=2), pickle.dumps(_Opens(), protocol=5)]

    def executed(self) -> bool:
        """Whether any payload has run (the file exists)."""
        return os.path.exists(self.path)

    def reset(self) -> None:
        """Remove the file after a positive control, so later checks start clean."""
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
