#!/usr/bin/env bash
# The GPU check in one command on a GPU machine (docs/runtime.md says what
# must travel with the working tree):
#
#   tools/gpu_check.sh          # packages from ./.whl if missing, then tools.gpu_check
#   ARGS="--device cpu --tiny" tools/gpu_check.sh   # the same on the CPU (CI)
#
# writes gpu_check.json and gpu_check.log into $OUT (or the current directory).
# Whatever happens, gpu_check.json is there at the end: an EXIT trap writes
# what is known (the step that failed, its exit status, the log's last lines),
# or adds that to the partial report the check itself left.
#
# Steps, each named in the JSON when it fails:
#   cuda_torch     $PYTHON must already have a CUDA torch: this script installs
#                  no torch and never asks a package index (it fails at once);
#   packages       the runtime's other packages: used as they are when they
#                  import, else installed from ./.whl (pip --no-index) into
#                  $GPU_SITE, first on PYTHONPATH; no wheels there: fail at once;
#   check_install  the installed stack can run the model and the server;
#   check          python -m tools.gpu_check under a hard time limit.
#
# Fill ./.whl on a machine where pip reaches the index, then carry it along:
#
#   tools/gpu_check.sh wheels   # wheels for CPython $WHEEL_PY (3.12), x86-64 Linux
#
# Variables: PYTHON (python3), GPU_SITE (/tmp/realtime-gpu-site), WHEELS (.whl),
# WHEEL_PY (3.12), ARGS (more flags for tools.gpu_check), BUDGET (420 s for
# the check's sections), LIMIT (500 s hard limit for the check), OUT (report
# folder).
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
SITE=${GPU_SITE:-/tmp/realtime-gpu-site}
WHEELS=${WHEELS:-.whl}
WHEEL_PY=${WHEEL_PY:-3.12}
BUDGET=${BUDGET:-420}
LIMIT=${LIMIT:-500}
OUT_DIR=${OUT:-.}
REPORT="$OUT_DIR/gpu_check.json"
LOG="$OUT_DIR/gpu_check.log"
# pip must never reach for the network on the GPU machine (not even to check
# its own version).
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# What the server and the check import beyond the GPU machine's torch stack,
# one pinned spec a line (comments and blank lines skipped).
mapfile -t PACKAGES < <(grep -v '^\s*\(#\|$\)' tools/gpu_wheels.txt)

if [[ "${1:-}" == "wheels" ]]; then
    # The one place this script uses the index: run it where pip reaches one.
    unset PIP_NO_INDEX
    set -e
    mkdir -p "$WHEELS"
    plat=()
    for p in manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
        plat+=(--platform "$p")
    done
    for spec in "${PACKAGES[@]}"; do
        # ChatTTS and encodec are published as source archives only: build their
        # (pure Python) wheels here.
        if ! "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --implementation cp \
                --python-version "$WHEEL_PY" "${plat[@]}" -d "$WHEELS" "$spec" 2>/dev/null; then
            "$PYTHON" -m pip wheel -q --no-deps -w "$WHEELS" "$spec"
        fi
    done
    ls -l "$WHEELS"
    exit 0
fi

mkdir -p "$OUT_DIR"
rm -f "$REPORT" "$REPORT.tmp"
: >"$LOG"
step=start
why=""

json_string() {  # $1 as a JSON string (control characters dropped)
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/ }
    s=${s//$'\n'/\\n}
    printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\010\013-\037')"
}

finish() {
    local rc=$?
    [[ $rc -eq 0 ]] && return
    local note tail
    tail=$(tail -n 20 "$LOG" 2>/dev/null)
    note="{\"failed_step\": $(json_string "$step"), \"exit_status\": $rc, \"why\": $(json_string "$why"), \"log_tail\": $(json_string "$tail")}"
    # Keep what the check measured; add where and why the script stopped.
    if [[ -s "$REPORT" ]] && "$PYTHON" - "$REPORT" "$note" <<'EOF' 2>/dev/null
import json, sys
path, note = sys.argv[1], json.loads(sys.argv[2])
with open(path) as f:
    report = json.load(f)
report.update(complete=False, script=note)
with open(path, "w") as f:
    json.dump(report, f, indent=1)
EOF
    then
        :
    else
        printf '{"complete": false, "script": %s}\n' "$note" >"$REPORT"
    fi
    echo "gpu_check.sh: failed at step '$step' (status $rc): $why; report in $REPORT" >&2
}
trap finish EXIT

fail() {  # fail STATUS WHY
    why=$2
    echo "gpu_check.sh: $why" | tee -a "$LOG" >&2
    exit "$1"
}

logged() {  # run "$@", its output to the terminal and the log
    "$@" 2>&1 | tee -a "$LOG"
    return "${PIPESTATUS[0]}"
}

step=cuda_torch
need_cuda="assert torch.cuda.is_available(), 'torch.cuda.is_available() is False'"
if [[ " ${ARGS:-} " == *" --device cpu "* ]]; then
    need_cuda="pass  # the CPU run (CI)"
    export TRITON_INTERPRET=1  # the live-length attention kernels in Triton's interpreter
fi
logged "$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda); $need_cuda" \
    || fail 2 "$PYTHON has no CUDA torch; this script installs none: set PYTHON to a python with one"

step=packages
# What must import: the model's stack, the server and the check's load driver.
IMPORTS="import realtime.runtime.compat as c; c.check_install(); import realtime.server, uvloop, tools.gpu_server"
mkdir -p "$SITE"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
if logged "$PYTHON" -c "$IMPORTS"; then
    echo "gpu_check.sh: the runtime's packages are already there" | tee -a "$LOG"
elif compgen -G "$WHEELS/*.whl" >/dev/null; then
    # The machine's torch stays; the packages go to a folder first on sys.path.
    logged "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --upgrade \
        --target "$SITE" "$WHEELS"/*.whl || fail 3 "pip could not install $WHEELS/*.whl into $SITE"
else
    fail 3 "the runtime's packages are missing and $WHEELS holds no wheels: run 'tools/gpu_check.sh wheels' where pip reaches the index and carry $WHEELS along (docs/runtime.md)"
fi

step=check_install
logged "$PYTHON" -c "$IMPORTS" \
    || fail 3 "the installed packages cannot run the model (see the log)"

step=check
# The check starts the server as "$PYTHON -m realtime": it finds the packages
# through PYTHONPATH as the check does. ARGS: e.g. --device cpu --tiny (CI).
PYTHONUNBUFFERED=1 logged timeout -k 10 "$LIMIT" "$PYTHON" -m tools.gpu_check \
    --out "$REPORT" --budget "$BUDGET" ${ARGS:-}
rc=$?
case $rc in
    0) echo "gpu_check: every section passed; report in $REPORT" ;;
    1) why="a section failed or was skipped (see the report)" ;;
    124|137) why="killed after the $LIMIT s limit" ;;
    *) why="tools.gpu_check exited with status $rc" ;;
esac
exit "$rc"
