# syntax=docker/dockerfile:1
# GPU image of the ChatTTS realtime server: one server process per GPU.
#
#   docker build -t chattts-realtime:0.1.0-cuda .
#   docker run --gpus 1 -p 8765:8765 -v chattts-models:/models --stop-timeout 45 \
#       chattts-realtime:0.1.0-cuda
#
# The CUDA libraries come with the torch wheel (its nvidia-* dependencies), so
# the base image only has to provide the driver hook-up of the NVIDIA container
# toolkit: the small "base" flavour is enough, "runtime" would ship a second
# copy of cuBLAS/cuDNN. Weights are not baked in: they live in the /models
# volume (see docs/deploy.md). Build and run details: docs/deploy.md.

ARG CUDA_BASE=nvidia/cuda:12.8.1-base-ubuntu24.04

FROM ${CUDA_BASE} AS builder
# torch must match the CUDA major version of the driver on the hosts; cu128
# wheels need driver >= 570.
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128
ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Same order as `make install` (docs/install.md): torch first, so that no
# other requirement can pull a different torch build.
RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/runtime.txt \
    && pip install --no-cache-dir --no-deps -r requirements/no-deps.txt
COPY pyproject.toml README.md LICENSE ./
COPY protocol/ protocol/
COPY scheduler/ scheduler/
COPY realtime/ realtime/
COPY clients/ clients/
# A non-editable install: the final image needs no source tree. check_install
# fails the build when the stack cannot import ChatTTS.
RUN pip install --no-cache-dir --no-deps . \
    && python -c "import realtime.engine.compat as c; c.check_install()"

FROM ${CUDA_BASE} AS runtime
LABEL org.opencontainers.image.title="chattts-realtime" \
      org.opencontainers.image.description="Streaming WebSocket TTS server around ChatTTS (GPU)" \
      org.opencontainers.image.licenses="AGPL-3.0-or-later"
ENV DEBIAN_FRONTEND=noninteractive
# The venv's interpreter is a link to this python3; same base, same version.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --create-home --home-dir /home/app app \
    && mkdir -p /models \
    && chown app:app /models
COPY --from=builder /opt/venv /opt/venv
# Weights: the checkpoint in the /models volume (start-up fails, naming the
# path, while it is empty). HF_HOME on the volume too: run with an empty
# CHATTTS_RT_MODEL_DIR and --weights auto uses (or downloads into) the hub cache
# there instead, and the download survives restarts.
# Auth tokens are never set here: pass CHATTTS_RT_AUTH_TOKEN at run time.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HOME=/models/.hf \
    CHATTTS_RT_HOST=0.0.0.0 \
    CHATTTS_RT_PORT=8765 \
    CHATTTS_RT_MODEL_DIR=/models \
    CHATTTS_RT_DEVICE=cuda
VOLUME ["/models"]
USER 10001:10001
WORKDIR /home/app
EXPOSE 8765
# The server drains on SIGTERM (CHATTTS_RT_DRAIN_TIMEOUT, 30 s by default):
# give `docker stop` more than that (--stop-timeout / -t).
STOPSIGNAL SIGTERM
# Ready, not merely alive: /readyz is 503 while the model loads and warms up
# (graph capture takes a while on first start) and while draining.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('CHATTTS_RT_PORT', '8765') + '/readyz', timeout=2)"]
ENTRYPOINT ["python", "-m", "realtime"]
CMD ["serve"]
