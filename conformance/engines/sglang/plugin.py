"""This package's SGLang plugin (entry point group ``sglang.srt.plugins``): run by SGLang at the start of each of its processes.

It does nothing unless asked through the environment, which every SGLang
process inherits:

* ``IPC_CONFORMANCE_SGLANG_IPC=reference``: the reference codec replaces
  SGLang's (:mod:`.reference_ipc`);
* ``IPC_CONFORMANCE_SGLANG_RECORD=FOLDER``: the frames the process sends are
  recorded (:mod:`.frame_recorder`), after the codec is chosen.

A failure is written to stderr and leaves SGLang's codec in place; the live
check notices (it counts the processes that report the reference codec).
"""

from __future__ import annotations

import os
import sys
import traceback

__all__ = ["plugin"]


def plugin() -> None:
    from .frame_recorder import RECORD_ENV
    from .frame_recorder import install as record
    from .reference_ipc import IPC_ENV, ReferenceIpcError, install

    try:
        if os.environ.get(IPC_ENV) == "reference":
            install()
        folder = os.environ.get(RECORD_ENV)
        if folder:
            record(folder)
    except (ReferenceIpcError, ImportError, OSError):
        print(f"ipc-conformance: plugin failed in pid {os.getpid()}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
