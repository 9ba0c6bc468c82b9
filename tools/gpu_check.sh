#!/usr/bin/env bash
# The GPU check in one command on a GPU machine (docs/runtime.md gives the
# whole procedure; tools/gpu_rehearsal.sh runs it here first, as the device will):
#
#   tools/gpu_check.sh          # carried ./.whl installed, then tools.gpu_check
#   ARGS="--device cpu --tiny" tools/gpu_check.sh   # the same on the CPU (CI)
#
# writes into $OUT (or the current directory): gpu_check.json (the report),
# gpu_check.log (this script's and the check's output) and server.log (the
# whole log of the server the check starts). Whatever happens, gpu_check.json
# is there at the end: an EXIT trap writes what is known (the step that failed,
# its exit status, the log's last lines), or adds that to the partial report
# the check itself left.
#
# Steps, each named in the JSON when it fails:
#   cuda_torch     $PYTHON must already have a CUDA torch: this script installs
#                  no torch and never asks a package index (it fails at once);
#   packages       the carried ./.whl, when there, installed as it is
#                  (pip --no-index --no-deps --target $GPU_SITE, first on
#                  PYTHONPATH), so that the check runs on exactly what the
#                  rehearsal ran; without wheels the packages must import as
#                  they are, else it fails at once;
#   check_install  the installed stack can run the model and the server;
#   check          python -m tools.gpu_check under a hard time limit.
#
# Fill ./.whl on a machine where pip reaches the index, then carry it along:
#
#   tools/gpu_check.sh wheels   # wheels for CPython $WHEEL_PY (3.12), x86-64 Linux
#
# Time: LIMIT (400 s) counts from this script's start; the check is killed
# LIMIT - elapsed - 15 s after it starts (the trap writes its note in the
# 15 s left), and its sections stop starting BUDGET_MARGIN (30 s) before that.
# Call it with the device tool's timeout_s at least LIMIT + 30.
# Variables: PYTHON (python3), GPU_SITE (/tmp/realtime-gpu-site, emptied before the
# install), WHEELS (.whl),
# WHEEL_PY (3.12), ARGS (more flags for tools.gpu_check), LIMIT, BUDGET_MARGIN,
# OUT (report folder).
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
SITE=${GPU_SITE:-/tmp/realtime-gpu-site}
WHEELS=${WHEELS:-.whl}
WHEEL_PY=${WHEEL_PY:-3.12}
LIMIT=${LIMIT:-400}
BUDGET_MARGIN=${BUDGET_MARGIN:-30}
TRAP_RESERVE=15
START=$(date +%s)
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
    for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
             manylinux1_x86_64; do
        plat+=(--platform "$p")
    done
    for spec in "${PACKAGES[@]}"; do
        if "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --implementation cp \
                --python-version "$WHEEL_PY" "${plat[@]}" -d "$WHEELS" "$spec"; then
            continue
        fi
        # No binary for CPython $WHEEL_PY: only a pure-Python package may be
        # built here (ChatTTS, encodec and docopt publish source archives only);
        # a compiled one built by this machine's Python would not load there.
        echo "gpu_check.sh wheels: no $WHEEL_PY wheel for $spec; building it, pure Python only" >&2
        built=$(mktemp -d)
        "$PYTHON" -m pip wheel -q --no-deps -w "$built" "$spec"
        compgen -G "$built/*.whl" >/dev/null \
            || { echo "gpu_check.sh wheels: pip built no wheel for $spec" >&2; exit 1; }
        for w in "$built"/*.whl; do
            case $(basename "$w") in
                *-py3-none-any.whl|*-py2.py3-none-any.whl) mv "$w" "$WHEELS/" ;;
                *) echo "gpu_check.sh wheels: $spec built as $(basename "$w"): compiled, not usable" \
                        "on CPython $WHEEL_PY there; find a binary wheel" >&2; exit 1 ;;
            esac
        done
        rm -rf "$built"
    done
    # Every wheel must install on CPython $WHEEL_PY, x86-64 Linux: one that does
    # not would stop the whole install there (pip installs all or none).
    "$PYTHON" - "$WHEEL_PY" "$WHEELS" <<'EOF_TAGS'
import sys
from pathlib import Path
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import parse_wheel_filename
major, minor = map(int, sys.argv[1].split("."))
platforms = [f"manylinux_2_{n}_x86_64" for n in range(39, 4, -1)] + ["manylinux2014_x86_64",
                                                                      "manylinux1_x86_64"]
supported = set(cpython_tags((major, minor), platforms=platforms))
supported |= set(compatible_tags((major, minor), f"cp{major}{minor}", platforms))
bad = [w.name for w in sorted(Path(sys.argv[2]).glob("*.whl"))
       if not parse_wheel_filename(w.name)[3] & supported]
if bad:
    sys.exit(f"gpu_check.sh wheels: not installable on CPython {major}.{minor} x86-64: {', '.join(bad)}")
EOF_TAGS
    ls -l "$WHEELS"
    echo "gpu_check.sh wheels: $(ls "$WHEELS"/*.whl | wc -l) wheels, $(du -sm "$WHEELS" | cut -f1) MiB" \
         "(the device tool carries 64 MiB with the tree)"
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
IMPORTS="import realtime.engine.compat as c; c.check_install(); import realtime.server.app, uvloop, tools.gpu_server"
mkdir -p "$SITE"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    # Always the carried wheels when there are some: the check then runs on
    # exactly what the rehearsal ran. The machine's torch stays; the packages
    # go to a folder first on sys.path, emptied first (a warm machine keeps
    # an earlier run's packages there).
    rm -rf "$SITE" && mkdir -p "$SITE"
    logged "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --upgrade \
        --target "$SITE" "$WHEELS"/*.whl || fail 3 "pip could not install $WHEELS/*.whl into $SITE"
elif logged "$PYTHON" -c "$IMPORTS"; then
    echo "gpu_check.sh: no wheels carried; the runtime's packages are already there" | tee -a "$LOG"
else
    fail 3 "the runtime's packages are missing and $WHEELS holds no wheels: run 'tools/gpu_check.sh wheels' where pip reaches the index and carry $WHEELS along (docs/runtime.md)"
fi

step=check_install
logged "$PYTHON" -c "$IMPORTS" \
    || fail 3 "the installed packages cannot run the model (see the log)"

step=check
# The check starts the server as "$PYTHON -m realtime": it finds the packages
# through PYTHONPATH as the check does. ARGS: e.g. --device cpu --tiny (CI).
# Its limit is what is left of LIMIT, less the trap's reserve; its sections
# stop starting BUDGET_MARGIN before that.
left=$(( LIMIT - ($(date +%s) - START) - TRAP_RESERVE ))
(( left > BUDGET_MARGIN + 5 )) || fail 124 "only $left s of the $LIMIT s limit left for the check"
echo "gpu_check.sh: $left s left for the check ($(( $(date +%s) - START )) s spent on the steps before)" \
    | tee -a "$LOG"
PYTHONUNBUFFERED=1 logged timeout -k 5 "$left" "$PYTHON" -m tools.gpu_check \
    --out "$REPORT" --budget "$(( left - BUDGET_MARGIN ))" ${ARGS:-}
rc=$?
case $rc in
    0) echo "gpu_check: every section passed; report in $REPORT" ;;
    1) why="a section failed or was skipped (see the report)" ;;
    124|137) why="killed after the $LIMIT s limit (counted from the script's start)" ;;
    *) why="tools.gpu_check exited with status $rc" ;;
esac
exit "$rc"
