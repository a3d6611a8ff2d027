"""``python -m conformance.engines.sglang.live_server SGLANG_SERVER_ARGS...``: SGLang's HTTP server with the scripted scheduler.

What ``python -m sglang.launch_server`` does (SGLang's plugins loaded, its
own argument parser, ``launch_server``, and every child process killed on
the way out), with one difference: the scheduler process is
:func:`conformance.engines.sglang.scripted_scheduler.run_scripted_scheduler`.
The IPC codec is chosen by the environment: ``SGLANG_USE_PICKLE_IPC`` (SGLang's
own switch) and ``IPC_CONFORMANCE_SGLANG_IPC=reference``
(:mod:`conformance.engines.sglang.reference_ipc`).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from conformance.interrupts import stop_with_parent


def main(argv: Optional[List[str]] = None) -> None:
    stop_with_parent()  # SIGTERM, SGLang's own shutdown, once the driver is gone (even killed by SIGKILL)
    from sglang.srt.entrypoints.http_server import launch_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    from .scripted_scheduler import run_scripted_scheduler

    load_plugins()
    server_args = prepare_server_args(sys.argv[1:] if argv is None else argv)
    try:
        launch_server(server_args, run_scheduler_process_func=run_scripted_scheduler)
    finally:
        kill_process_tree(os.getpid(), include_parent=False)


if __name__ == "__main__":
    main()
