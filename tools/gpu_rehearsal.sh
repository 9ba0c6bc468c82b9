#!/usr/bin/env bash
# The GPU check rehearsed here as the device runs it: fails where the device
# would, so that the one real try there is not lost to an environment error.
#
#   tools/gpu_rehearsal.sh      # about 3 minutes once the image stand-in exists
#
# 1. The image stand-in ($REHEARSAL_IMAGE, kept between runs, rebuilt when
#    tools/gpu_image.txt changes): a Python 3.12 environment holding torch
#    2.11.0 (PyPI's CUDA build: the device's version; it runs on a CPU) and
#    exactly the packages tools/gpu_image.txt lists, --no-deps, nothing else.
# 2. The carried wheels: .whl/ filled by 'tools/gpu_check.sh wheels' from
#    tools/gpu_wheels.txt (refilled when the list changes).
# 3. What travels: the tree as git sees it (tracked and untracked-not-ignored
#    files) plus .whl/ is copied to a fresh folder, and its size is printed
#    against the device tool's 64 MiB limit (over it: exit 4).
# 4. The device's command, run in that copy with the stand-in's python:
#    tools/gpu_check.sh installs ONLY .whl/ (pip --no-index --no-deps
#    --target) and runs every section of tools.gpu_check on the CPU with tiny
#    weights (ARGS="--device cpu --tiny"), its report in $REHEARSAL_OUT laid
#    out as $OUT is on the device.
#
# Exit status: the check's (0: every section passed), or 4 when the carried
# tree is too large, 5 when the stand-in or the wheels could not be built.
# Variables: REHEARSAL_PYTHON (python3.12), REHEARSAL_IMAGE
# (/tmp/realtime-gpu-image), REHEARSAL_OUT (/tmp/realtime-gpu-rehearsal/out),
# WHEELS (.whl), BUDGET and LIMIT (as tools/gpu_check.sh reads them).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PY312=${REHEARSAL_PYTHON:-}
if [[ -z $PY312 ]]; then
    PY312=$(command -v python3.12 2>/dev/null || true)
    # pyenv's shim exists even where no 3.12 is the selected version.
    if [[ -z $PY312 ]] || ! "$PY312" -V >/dev/null 2>&1; then
        PY312=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)
    fi
fi
IMAGE=${REHEARSAL_IMAGE:-/tmp/realtime-gpu-image}
WORK=$(dirname "${REHEARSAL_OUT:-/tmp/realtime-gpu-rehearsal/out}")
OUT_DIR=${REHEARSAL_OUT:-$WORK/out}
WHEELS=${WHEELS:-.whl}
LIMIT_MIB=64
TORCH_SPEC="torch==2.11.0"

say() { echo "gpu_rehearsal: $*" >&2; }

[[ -n $PY312 ]] && "$PY312" -V >/dev/null 2>&1 || { say "no python3.12 here (set REHEARSAL_PYTHON)"; exit 5; }

# 1. The image stand-in.
stamp="$TORCH_SPEC $(sha256sum tools/gpu_image.txt | cut -c1-16) $("$PY312" -V 2>&1)"
if [[ "$(cat "$IMAGE/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    say "building the image stand-in in $IMAGE ($("$PY312" -V 2>&1); $TORCH_SPEC and tools/gpu_image.txt)"
    rm -rf "$IMAGE"
    "$PY312" -m venv "$IMAGE" || exit 5
    # torch with its own dependencies (the CUDA libraries it loads at import),
    # then the image's packages alone: no dependency may sneak in.
    "$IMAGE/bin/python" -m pip install -q "$TORCH_SPEC" || { say "torch install failed"; exit 5; }
    grep -v '^\s*\(#\|$\)' tools/gpu_image.txt | xargs "$IMAGE/bin/python" -m pip install -q --no-deps \
        || { say "the image's packages could not be installed"; exit 5; }
    echo "$stamp" >"$IMAGE/.stamp"
fi

# 2. The carried wheels, refilled whenever the list changed since the last fill.
list_hash=$(sha256sum tools/gpu_wheels.txt | cut -c1-16)
if [[ "$(cat "$WHEELS/.list" 2>/dev/null)" != "$list_hash" ]]; then
    say "filling $WHEELS from tools/gpu_wheels.txt"
    rm -rf "$WHEELS"
    tools/gpu_check.sh wheels >/dev/null || { say "tools/gpu_check.sh wheels failed"; exit 5; }
    echo "$list_hash" >"$WHEELS/.list"
fi

# 3. What travels, copied to a fresh folder.
rm -rf "$WORK/tree" "$OUT_DIR"
mkdir -p "$WORK/tree" "$OUT_DIR"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [[ -e $f ]] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$WORK/tree"
cp -r "$WHEELS" "$WORK/tree/"
[[ -d shared ]] && cp -r shared "$WORK/tree/"
tree_kib=$(du -sk --exclude="$WHEELS" "$WORK/tree" | cut -f1)
wheels_kib=$(du -sk "$WORK/tree/$WHEELS" | cut -f1)
total_mib=$(( (tree_kib + wheels_kib + 1023) / 1024 ))
say "carried: tree $((tree_kib / 1024)) MiB + $WHEELS $((wheels_kib / 1024)) MiB = $total_mib MiB of $LIMIT_MIB MiB"
if (( total_mib > LIMIT_MIB )); then
    say "over the device tool's limit: carry fewer wheels (docs/runtime.md)"
    exit 4
fi

# 4. The device's command, with the stand-in's python and CPU flags.
say "running tools/gpu_check.sh in $WORK/tree, report in $OUT_DIR"
start=$(date +%s)
(cd "$WORK/tree" && env -u PYTHONPATH -u VIRTUAL_ENV PATH="$IMAGE/bin:$PATH" PYTHON="$IMAGE/bin/python" \
    GPU_SITE="$WORK/site" OUT="$OUT_DIR" ARGS="--device cpu --tiny ${ARGS:-}" tools/gpu_check.sh) \
    >"$WORK/console.log" 2>&1
rc=$?
say "tools/gpu_check.sh exited $rc after $(( $(date +%s) - start )) s; console in $WORK/console.log"
"$IMAGE/bin/python" - "$OUT_DIR/gpu_check.json" <<'EOF' >&2
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    sys.exit(f"gpu_rehearsal: no report: {exc}")
def status(entry):
    if not isinstance(entry, dict):
        return "missing"
    for key in ("error", "skipped", "graph_error"):
        if key in entry:
            return f"{key}: {str(entry[key]).splitlines()[0][:160]}"
    return "ok"
print(f"gpu_rehearsal: complete={report.get('complete')}", file=sys.stderr)
if "script" in report:
    print(f"gpu_rehearsal: script: {report['script'].get('failed_step')}: {report['script'].get('why')}",
          file=sys.stderr)
for name in report.get("sections", []):
    print(f"gpu_rehearsal:   {name:18s} {status(report.get(name))}", file=sys.stderr)
for line in (report.get("server") or {}).get("server_errors", []):
    print(f"gpu_rehearsal: server log: {line}", file=sys.stderr)
EOF
exit "$rc"
