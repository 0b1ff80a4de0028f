# Two commands run the course: `make lab` opens it, `make test` checks it.
# Both create .venv and install into it the first time; later runs install nothing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# torch is installed on its own, before everything else, so that nothing pulls a
# multi-GB CUDA build. On Linux without a local CPU wheel, point this at PyTorch's
# CPU index, e.g. `make lab TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu`.
TORCH_INDEX_URL ?=
TORCH_INDEX_ARG := $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL),)
# Jupyter refuses to start as root unless told it may.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test install lint notebooks slides profiles clean

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_FLAG)

test: $(STAMP)
	$(BIN)/ruff check helpers tests notebooks benchmarks solutions
	$(BIN)/python -m pytest -rs --nbval --nbval-current-env tests notebooks

install: $(STAMP)

# Re-run every notebook top to bottom in a fresh kernel and save it with its outputs
# (what strict nbval compares against), each print's pieces merged into one output.
# One notebook: make notebooks NB=notebooks/01_*.ipynb
NB ?= notebooks/[0-9]*.ipynb
notebooks: $(STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False \
		--Exporter.preprocessors=nbconvert.preprocessors.CoalesceStreamsPreprocessor $(NB)

# Every notebook as reveal.js slides (1280 x 720, speaker notes on S) in build/slides.
# For live slides, open a notebook in `make lab` and press Alt+R (RISE).
slides: $(STAMP)
	$(BIN)/python -m helpers.slides export --output-dir build/slides

# Run the course on Colab's and the lowest declared package versions (.ci/profiles/*.txt,
# one venv each in build/profiles); run it before raising a floor. One: PROFILE=colab.
PROFILE ?= all
profiles:
	PYTHON=$(PYTHON) bash .ci/profiles/run $(PROFILE)

lint: $(STAMP)
	$(BIN)/ruff check helpers tests notebooks benchmarks solutions

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python >= 3.10 is needed; run make with PYTHON=python3.X")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt $(TORCH_INDEX_ARG) torch
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts build
