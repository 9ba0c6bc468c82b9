#!/usr/bin/env bash
# The GPU check in one command on a fresh GPU machine:
#
#   tools/gpu_check.sh          # venv, packages, then tools.gpu_check
#
# writes gpu_check.json and gpu_check.log into $OUT (or the current directory).
# A CUDA torch that $PYTHON already has is used as it is, with the runtime's
# packages installed into $GPU_SITE, put first on PYTHONPATH; otherwise a venv
# ($GPU_VENV) gets $TORCH_SPEC from $TORCH_INDEX (CUDA 12.8 wheels by default). The runtime's packages come from ./.whl when it
# holds wheels (no network needed), else from the package index.
#
# For a machine without network access, fill ./.whl first on one that has it:
#
#   tools/gpu_check.sh wheels   # wheels for CPython $WHEEL_PY (3.12), x86-64 Linux
#
# Variables: PYTHON (python3), GPU_SITE, GPU_VENV (under /tmp), WHEELS (.whl), TORCH_SPEC
# (torch), TORCH_INDEX, WHEEL_PY (3.12), BUDGET (240 s for the check's
# sections), LIMIT (290 s hard limit for the whole check).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${GPU_VENV:-/tmp/realtime-gpu-venv}
SITE=${GPU_SITE:-/tmp/realtime-gpu-site}
WHEELS=${WHEELS:-.whl}
TORCH_SPEC=${TORCH_SPEC:-torch}
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cu128}
WHEEL_PY=${WHEEL_PY:-3.12}
BUDGET=${BUDGET:-240}
LIMIT=${LIMIT:-290}
OUT_DIR=${OUT:-.}

# What the check imports beyond torch, numpy, scipy, pyyaml, tqdm, requests,
# safetensors, sympy and numba (pinned to the versions the tests run with;
# transformers < 5 as requirements/runtime.txt says).
PACKAGES=(ChatTTS==0.2.5 vocos==0.1.0 encodec==0.1.1 vector-quantize-pytorch==1.32.0
          einx==0.4.3 frozendict==2.5.1 loguru==0.7.3 torch-einops-utils==0.2.0
          pybase16384==0.3.9 cffi==2.1.1 pycparser==3.12 orjson==3.13.0
          transformers==4.57.6 tokenizers==0.22.2 huggingface-hub==0.36.2)

if [[ "${1:-}" == "wheels" ]]; then
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
cuda_torch() { "$1" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; }
if cuda_torch "$PYTHON"; then
    # Keep the machine's CUDA torch; the packages go to a folder that comes
    # first on sys.path (a venv made from a venv's python would not see it).
    PY=$PYTHON
    mkdir -p "$SITE"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    target=(--target "$SITE" --upgrade)
else
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    PY="$VENV/bin/python"
    cuda_torch "$PY" || "$PY" -m pip install -q "$TORCH_SPEC" --index-url "$TORCH_INDEX"
    target=()
fi
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile "${target[@]}" "$WHEELS"/*.whl
else
    # Only what the check imports beyond the machine's torch stack (see PACKAGES).
    "$PY" -m pip install -q "${target[@]}" numpy scipy pyyaml tqdm requests safetensors sympy numba
    "$PY" -m pip install -q --no-deps "${target[@]}" "${PACKAGES[@]}"
fi
"$PY" -c "import realtime.runtime.compat as c; c.check_install()"

set +e
PYTHONUNBUFFERED=1 timeout "$LIMIT" "$PY" -m tools.gpu_check \
    --out "$OUT_DIR/gpu_check.json" --budget "$BUDGET" 2>&1 | tee "$OUT_DIR/gpu_check.log"
rc=${PIPESTATUS[0]}
set -e
if [[ ! -s "$OUT_DIR/gpu_check.json" ]]; then
    echo "{\"complete\": false, \"error\": \"gpu_check exited $rc before writing a report\"}" \
        > "$OUT_DIR/gpu_check.json"
fi
echo "gpu_check exit status $rc; report in $OUT_DIR/gpu_check.json"
exit "$rc"
