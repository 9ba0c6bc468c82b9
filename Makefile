# Two commands do all set-up on a fresh machine:
#   make serve   # create/reuse .venv, install, start the server on :8765
#   make test    # create/reuse .venv, install, run the whole test suite
#
# TORCH_SPEC/TORCH_INDEX choose the torch build. The default takes torch 2.13.0
# as the package index (or a local wheel directory) serves it. For an explicit
# CPU or CUDA build elsewhere, see docs/install.md, e.g.
#   make serve TORCH_INDEX=https://download.pytorch.org/whl/cu128
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
ARGS ?=
PYTEST_ARGS ?=

STAMP := $(VENV)/.installed

.PHONY: install serve test lint bench clean gpu-check gpu-rehearsal mutate

install: $(STAMP)

# tools/gpu_wheels.txt pins what the GPU machine is given; installing under it
# as constraints keeps the tests on exactly those versions, whatever PyPI
# released since (tests/test_gpu_wheels.py).
PINS := tools/gpu_wheels.txt

$(STAMP): pyproject.toml requirements/runtime.txt requirements/dev.txt requirements/no-deps.txt $(PINS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PIP) install -q -c $(PINS) -r requirements/runtime.txt -r requirements/dev.txt
	$(PIP) install -q --no-deps -c $(PINS) -r requirements/no-deps.txt
	$(PIP) install -q --no-deps --no-build-isolation -e .
	$(PY) -c "import realtime.engine.compat as c; c.check_install()"
	touch $@

serve: $(STAMP)
	$(PY) -m realtime serve $(ARGS)

test: $(STAMP) lint
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench runtime --quick

# Mutation testing (not in CI: tens of minutes per target). MUTATE_ARGS picks
# targets, e.g. make mutate MUTATE_ARGS="sampling vocoder". See docs/testing.md.
MUTATE_ARGS ?=
mutate: $(STAMP)
	$(PY) -m tools.mutate $(MUTATE_ARGS)

# On a GPU machine with a CUDA torch: the carried .whl/ installed, then
# tools.gpu_check (JSON in $$OUT or here). See docs/runtime.md.
gpu-check:
	tools/gpu_check.sh

# Here, before a GPU machine is lent: the same command as the device runs it,
# in a stand-in for its Python 3.12 image, on the CPU (docs/runtime.md).
gpu-rehearsal:
	tools/gpu_rehearsal.sh

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mutate
