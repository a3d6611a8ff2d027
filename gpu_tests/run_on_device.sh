#!/usr/bin/env bash
# Run the GPU checks on a machine with CUDA, in one go, and keep a log.
#
#   gpu_tests/run_on_device.sh            # from the repository root (or anywhere: it cds there)
#   PYTHON=/path/to/venv/bin/python gpu_tests/run_on_device.sh   # another interpreter
#
# What it does, each step under its own time limit (well under 8 minutes in all):
#   1. installs the wheels carried in .whl/ (msgspec, pyzmq, optionally this
#      package) into /tmp/site, where the machine lacks them; without .whl/
#      the interpreter's own packages are used;
#   2. runs `pytest gpu_tests` (device preservation of every tensor field on
#      every visible GPU, map_location, out-of-band frames from CUDA memory,
#      the live pipeline with its scheduler on the GPU); without CUDA every
#      test skips with a reason that says so, and the step still passes;
#   3. runs the live comparison `python -m conformance.live --compare
#      pickle,reference,reference-v2` on cuda at concurrency 16 and 1, with
#      its throughput and inter-token latency (on cpu, shorter, without CUDA).
#
# The log goes to $OUT/gpu-log.txt when $OUT is set, else reports/gpu-log.txt;
# the live runs' figures also go to live-cuda-c16.json / live-cuda-c1.json
# beside it. Exit status: 0 only if every step passed.
#
# To prepare the wheels on a machine with network access (python 3.12, x86-64):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       -d .whl msgspec==0.23.0 pyzmq==27.3.0
#   python3 -m pip wheel --no-deps -w .whl .    # optional: the repo is put on PYTHONPATH anyway
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
PYTHON="${PYTHON:-python3}"
if [ -n "${OUT:-}" ]; then LOGDIR="$OUT"; else LOGDIR="$ROOT/reports"; fi
mkdir -p "$LOGDIR"
LOG="$LOGDIR/gpu-log.txt"
: >"$LOG"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0

log() { echo "$@" | tee -a "$LOG"; }
status=0
step() {  # step NAME SECONDS CMD...: run CMD under a time limit, log everything, remember a failure
    local name="$1" limit="$2"; shift 2
    log ""
    log "=== $name (limit ${limit}s): $*"
    local start=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then log "=== $name: TIMED OUT after ${limit}s"; fi
    log "=== $name: exit $rc in $((SECONDS - start))s"
    [ "$rc" -eq 0 ] || status=1
}

log "run_on_device.sh at $(date -u +%Y-%m-%dT%H:%M:%SZ) in $ROOT"

shopt -s nullglob
wheels=(.whl/*.whl)
if [ ${#wheels[@]} -gt 0 ]; then
    step "install carried wheels" 120 "$PYTHON" -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}"
    export PYTHONPATH="$ROOT:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
else
    log "no wheels in .whl/: using $PYTHON's own packages"
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

command -v nvidia-smi >/dev/null && step "nvidia-smi" 30 nvidia-smi -L
step "environment" 60 "$PYTHON" -c '
import sys, torch, msgspec, zmq
print("python", sys.version.split()[0], "| torch", torch.__version__, "| msgspec", msgspec.__version__, "| pyzmq", zmq.__version__)
print("cuda available:", torch.cuda.is_available(), "| devices:", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
'
if [ "$status" -ne 0 ]; then
    log "the environment is not usable; stopping"
    exit 1
fi

step "pytest gpu_tests" 330 "$PYTHON" -m pytest gpu_tests -q -rs -p no:cacheprovider

if "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    step "live pipeline on cuda, concurrency 16" 150 "$PYTHON" -m conformance.live --device cuda \
        --compare pickle,reference,reference-v2 --requests 96 --concurrency 16 --json "$LOGDIR/live-cuda-c16.json"
    step "live pipeline on cuda, concurrency 1" 120 "$PYTHON" -m conformance.live --device cuda \
        --compare pickle,reference,reference-v2 --requests 24 --concurrency 1 --json "$LOGDIR/live-cuda-c1.json"
else
    log ""
    log "CUDA is not available: the live comparison runs on cpu instead, shortened"
    step "live pipeline on cpu, concurrency 8" 150 "$PYTHON" -m conformance.live --device cpu \
        --compare pickle,reference --requests 16 --concurrency 8 --json "$LOGDIR/live-cpu.json"
fi

log ""
log "run_on_device.sh: $([ "$status" -eq 0 ] && echo PASSED || echo FAILED) (log: $LOG)"
exit "$status"
