"""``python -m conformance.engines.sglang.live_record``: record what SGLang's own server sends, for the benchmark corpus.

It starts SGLang's server (msgpack IPC, the scripted scheduler) with frame
recording on (:mod:`.frame_recorder`), runs ``sglang.bench_serving`` at
concurrency 1 (the seed's 1024 input and 200 output tokens) and the live
check's workload one request at a time, and writes
``conformance/benchmarks/recorded/sglang-<version>-live.json``: per family,
one frame as SGLang's own codec wrote it (hex), the median-sized of its kind:

* ``live-<Type>`` for each message type the processes sent;
* ``live-BatchTokenIDOutput-1``: a decode step of one request without
  logprobs (what every step of the concurrency-1 benchmark sends);
* ``live-BatchTokenIDOutput-1-logprobs``: one request's step with top-k logprobs.

The pickled ``time_stats`` and ``customized_info`` SGLang attaches
(``PickleWrapper``) are cleared before the frame is stored: the reference
refuses pickle unless asked, and their cost is pickle's, the same whichever
msgpack codec carries them. The benchmark corpus decodes these frames with
the reference codec (wire v1 is SGLang's bytes) into its ``live-*`` families
(:mod:`conformance.benchmarks.corpus`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

from .frame_recorder import read_records
from .live_frontend import SGLangFrontend

__all__ = ["main", "select_frames", "RECORDED_PATH"]

RECORDED_PATH = os.path.join("conformance", "benchmarks", "recorded", "sglang-0.5.23-live.json")


def _median(frames: List[bytes]) -> Optional[bytes]:
    if not frames:
        return None
    ordered = sorted(set(frames), key=lambda f: (len(f), f))
    return ordered[len(ordered) // 2]


def select_frames(records: List[Any], io: Any) -> Dict[str, bytes]:
    """Family -> frame (pickled fields cleared, re-encoded with SGLang's codec) from ``(class name, frame)`` records."""
    by_family: Dict[str, List[bytes]] = {}
    for name, frame in records:
        msg = io.msgpack_decode(frame)
        for field in ("time_stats", "customized_info"):
            if type(getattr(msg, field, None)).__name__ == "PickleWrapper":
                setattr(msg, field, None)
        clean = bytes(io.msgpack_encode(msg))
        by_family.setdefault(f"live-{name}", []).append(clean)
        if name == "BatchTokenIDOutput" and len(msg.rids) == 1:
            top = msg.output_top_logprobs_val
            family = "live-BatchTokenIDOutput-1-logprobs" if top and top[0] else "live-BatchTokenIDOutput-1" if msg.output_token_logprobs_val is None else None
            if family:
                by_family.setdefault(family, []).append(clean)
    return {family: f for family, frames in sorted(by_family.items()) if (f := _median(frames)) is not None}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.engines.sglang.live_record", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=RECORDED_PATH, help="where to write the frames (default: %(default)s)")
    parser.add_argument("--workdir", default=None, help="server logs and raw recordings (default: a temporary folder)")
    args = parser.parse_args(argv)
    os.environ["SGLANG_USE_PICKLE_IPC"] = "0"
    import sglang
    from sglang.srt.managers import io_struct as io

    frontend = SGLangFrontend()
    workdir = args.workdir or tempfile.mkdtemp(prefix="live-record-")
    folder = os.path.join(workdir, "frames")
    with frontend.serve("msgpack", workdir, record=folder) as url:
        out = os.path.join(workdir, "bench.jsonl")
        argv_bench = frontend.bench_argv(url, concurrency=1, prompts=4, input_len=1024, output_len=200, seed=0, output_file=out)
        subprocess.run(argv_bench, check=True, capture_output=True)
        items = frontend.workload(27, 0)
        with ThreadPoolExecutor(max_workers=1) as pool:
            list(pool.map(lambda item: frontend.answer(url, item), items))
        frontend.control(url)
    frames = select_frames(list(read_records(folder)), io)
    doc = {
        "generated_by": "python -m conformance.engines.sglang.live_record" + ("" if args.out == RECORDED_PATH else f" --out {args.out}"),
        "sglang": sglang.__version__,
        "note": "frames SGLang's own server sent (msgpack IPC, scripted scheduler); pickled time_stats/customized_info cleared",
        "frames": {family: frame.hex() for family, frame in frames.items()},
    }
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {args.out}: {', '.join(f'{k} ({len(v)} B)' for k, v in frames.items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
