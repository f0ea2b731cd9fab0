# rocport: `make demo` runs the main job, `make test` the tests. Each sets itself up first
# (.ci/setup: apt packages, .venv, Docker daemon, ROCm build image), quickly when all is there.
VENV ?= .venv
ROCPORT := $(VENV)/bin/rocport
PYTHON := $(VENV)/bin/python
# `make test`: the suite in parallel on pytest-xdist workers (two more than cores, tests/conftest.py;
# loadgroup is our scheduler, tests/parallel.py, which keeps a module's tests on one worker where they
# share a module-scoped fixture), then the tests marked `serial`, which need the machine to themselves
# (machine-wide container cleanup, client timings), in one process. `make test-serial`: all in one process.
PYTEST_ARGS ?= -q --durations=15 -n auto --dist loadgroup -m "not serial" tests
SERIAL_ARGS ?= -q --durations=5 -m serial tests

# The main job: what this machine offers, then the flagship port (GLM-5.2 on MI355X, reproduced on the
# fixture framework) end to end in the ROCm build container: patch branch, PR series, report, benchmark.
DEMO = $(ROCPORT) doctor && $(ROCPORT) demo

.PHONY: setup demo test test-serial lint image clean-containers

setup:
	bash .ci/setup

demo: setup
	$(DEMO)

# pytest exits 5 when it collected nothing: a suite (or a serial pass) that ran no tests has not passed.
# The serial pass runs even when the parallel one failed, so one run reports both.
test: setup
	@rc=0; $(PYTHON) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	[ $$rc -ne 5 ] || { echo "make test: pytest collected no tests"; rc=1; }; \
	if [ -n '$(strip $(SERIAL_ARGS))' ]; then \
	  serial=0; $(PYTHON) -m pytest $(SERIAL_ARGS) || serial=$$?; \
	  [ $$serial -ne 5 ] || { echo "make test: pytest collected no tests marked serial"; serial=1; }; \
	  [ $$serial -eq 0 ] || rc=$$serial; \
	fi; exit $$rc

# Lint and types: ruff's rules and formatting, then mypy (strict on tools/ and sandboxes/). Config in
# pyproject.toml; .pre-commit-config.yaml runs the same tools before each commit.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test-serial:
	@$(MAKE) --no-print-directory test PYTEST_ARGS="-q --durations=15 tests" SERIAL_ARGS=

image: setup
	$(ROCPORT) image build 5.7

clean-containers:
	$(PYTHON) -c "from sandboxes import cleanup_orphans; print(cleanup_orphans())"
