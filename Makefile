# Two commands run the course: `make lab` opens it, `make test` checks it.
# Both create .venv and install into it the first time; later runs install nothing.
# `make lab` installs what a learner needs (the course, its runtime dependencies and
# JupyterLab); `make test` adds the test tools (the test extra) on top, in either order.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Each stamp marks one install done; pyproject.toml or constraints.txt newer than it means
# it is done again.
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
SITE_STAMP := $(VENV)/.installed-site
# torch is installed first, on its own, by install_torch.py: a CPU build, never a
# multi-GB CUDA build unasked (on Linux: PyTorch's CPU index, else a local CPU wheel, else
# it stops and says how to choose). TORCH_INDEX_URL replaces PyTorch's CPU index (e.g. a
# mirror); TORCH_INDEX_URL=https://pypi.org/simple accepts PyPI's CUDA build.
TORCH_INDEX_URL ?=
# The MathJax extension jupyterlab-rise depends on, switched off at install (see below).
MATHJAX3 := @jupyterlab/mathjax3-extension
# Jupyter refuses to start as root unless told it may.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test test-published check test-other-kernels benchmarks-short install lint notebooks slides lecture site profiles zip clean
LINTED := helpers tools tests notebooks benchmarks solutions install_torch.py course_setup.py \
	conftest.py .ci/profiles

# The notebooks under the kernels least like a modern CPU's: no vector kernels in PyTorch,
# MKL and oneDNN on SSE4, one thread. What the notebooks store must be what any machine
# prints (CONTRIBUTING.md, "Outputs any CPU prints"), so strict nbval must pass here too.
# `make test`, `make notebooks` and `make profiles` run the CPU's best kernels, as learners do.
OTHER_KERNELS := ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 \
	ONEDNN_MAX_CPU_ISA=SSE41 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_FLAG)

# Strict nbval runs each notebook once and, in the same kernel, every cell a second time
# (conftest.py); the browser tests run each once more in JupyterLab. pytest-xdist runs
# WORKERS processes, a test module or a notebook on one worker (--dist loadscope), in the
# order given: the longest first (the browser tests, then the notebooks). Three on two
# cores: much of the time a worker waits on a kernel or a browser.
# The checks of the built website and offline deck (marker `published`) are left to
# `make test-published`, which CI runs: a change to a notebook is checked without them.
WORKERS ?= 3
XDIST := -n $(WORKERS) --dist loadscope --no-loadscope-reorder
test: $(TEST_STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/python -m pytest $(XDIST) -rs -m "not published" --nbval --nbval-current-env tests/browser notebooks tests

# The website and the offline deck, built and opened in Chromium with the network cut.
test-published: $(TEST_STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadscope -rs -m published tests/browser tests/tools

# The edit loop for one notebook (tools/check.py): run it and save its outputs, say which
# changed, re-assign its slides, rewrite the README's times, run the tests that concern it.
# Fails when the stored outputs were stale. make check NB=notebooks/01_self_attention.ipynb
check: $(TEST_STAMP)
	$(BIN)/python -m tools.check $(NB)

# Every notebook under strict nbval with the other kernels (above); CI runs it. Two
# workers: each kernel has one thread here.
test-other-kernels: $(TEST_STAMP)
	$(OTHER_KERNELS) $(BIN)/python -m pytest -n 2 --dist loadscope --nbval --nbval-current-env notebooks

# Every benchmark once, in a short mode (one notebook, a round, a few moves): so that none
# can break unnoticed. CI runs it; its figures mean little (benchmarks/README.md has the
# real runs and their commands).
benchmarks-short: $(TEST_STAMP)
	$(BIN)/python benchmarks/course_runtime.py --rounds 1 --only 01
	$(BIN)/python benchmarks/cache_growth.py --lengths 64,128 --rounds 1
	$(BIN)/python benchmarks/widget_latency.py --changes 3 --explorers self_attention_explorer
	$(BIN)/python benchmarks/explorer_memory.py --builds 2 --moves 2 --explorers self_attention_explorer
	$(BIN)/python benchmarks/hub_sizing.py --notebook 01_self_attention --learners 1,2 --moves 3
	$(BIN)/python benchmarks/browser_latency.py --moves 1 --floor-moves 2 --only 01

install: $(STAMP)

# Re-run every notebook top to bottom in a fresh kernel and save it with its outputs
# (what strict nbval compares against), each print's pieces merged into one output.
# One notebook: make notebooks NB=notebooks/01_*.ipynb
NB ?= notebooks/[0-9]*.ipynb
notebooks: $(STAMP)
	$(BIN)/python -m tools.check --execute-only $(NB)

# Every notebook as reveal.js slides (1280 x 720, speaker notes on S) in build/slides,
# with reveal.js, MathJax and the rest next to them (assets/): the folder works offline.
# They come from npm at the versions of tools/deck_assets/package.json (needs npm; the
# packages are installed once, in build/slides-assets). Open build/slides/NN_*.slides.html.
# For live slides, open a notebook in `make lab` and press Alt+R (RISE).
slides: $(STAMP)
	$(BIN)/python -m tools.slides export --output-dir build/slides

# The notebooks for a lecture, in build/lecture/notebooks: outputs cleared (the class sees
# each result as it runs), speaker notes and slide layout kept, with the course's helpers
# next to them. Present from it: $(BIN)/jupyter lab --notebook-dir=build/lecture/notebooks
lecture: $(STAMP)
	$(BIN)/python -m tools.lecture --output-dir build/lecture

# The course as a website in build/site (SITE_DIR=...): a page per notebook from its stored
# outputs (never run again), search, a page per solution, and the theme's launch buttons for
# Binder and Colab once the README's launch links have the course's public address (add
# HUB=https://your.hub for JupyterHub). Sphinx, MyST-NB, sphinx-book-theme and MathJax (the
# jupyter-server-mathjax package) come with the site extra, installed once with pip, like the
# test extra: no npm. The folder works opened from disk, with no network: publish it on any
# static host.
SITE_DIR ?= build/site
site: $(SITE_STAMP)
	$(BIN)/python -m tools.site --output-dir $(SITE_DIR) $(if $(HUB),--hub $(HUB))

# The course as one zip for learners, build/causal-attention-course.zip (tools/course_zip.py:
# the files git tracks that a learner needs, in one folder), while it has no public address:
# hand it out; on Colab a notebook's setup cell asks for it. Standard library only: no install.
zip:
	$(PYTHON) -m tools.course_zip

# Run the course on Colab's and the lowest declared package versions (.ci/profiles/*.txt,
# one venv each in build/profiles); run it before raising a floor. One: PROFILE=colab.
PROFILE ?= all
profiles:
	PYTHON=$(PYTHON) bash .ci/profiles/run $(PROFILE)

lint: $(TEST_STAMP)
	$(BIN)/ruff check $(LINTED)

# The learner's install (make lab, make install): torch, then the course with its runtime
# dependencies, JupyterLab among them.
$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python >= 3.10 is needed; run make with PYTHON=python3.X")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python install_torch.py $(TORCH_INDEX_URL)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	# jupyterlab-rise pulls in jupyterlab-mathjax3, which JupyterLab 4.6 lists as
	# incompatible; JupyterLab typesets formulas with its own MathJax, so it is switched off.
	$(BIN)/jupyter labextension disable --level=sys_prefix $(MATHJAX3) > /dev/null
	touch $(STAMP)

# The test tools (make test, make lint), on top of the learner's install.
$(TEST_STAMP): $(STAMP) pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(TEST_STAMP)

# The website's build tools (make site), on top of the learner's install.
$(SITE_STAMP): $(STAMP) pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[site]'
	touch $(SITE_STAMP)

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts build
