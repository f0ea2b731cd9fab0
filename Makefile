# rocport: `make demo` runs the main job, `make test` the tests. Each sets itself up first
# (.ci/setup: apt packages, .venv, Docker daemon, ROCm build image), quickly when all is there.
VENV ?= .venv
ROCPORT := $(VENV)/bin/rocport
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?= -q --durations=15 tests

# The main job: what this machine offers, then the flagship port (GLM-5.2 on MI355X, reproduced on the
# fixture framework) end to end in the ROCm build container: patch branch, PR series, report, benchmark.
DEMO = $(ROCPORT) doctor && $(ROCPORT) demo

.PHONY: setup demo test image clean-containers

setup:
	bash .ci/setup

demo: setup
	$(DEMO)

# pytest exits 5 when it collected nothing: a suite that ran no tests has not passed.
test: setup
	@rc=0; $(PYTHON) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests"; exit 1; fi; exit $$rc

image: setup
	$(ROCPORT) image build 5.7

clean-containers:
	$(PYTHON) -c "from sandboxes import cleanup_orphans; print(cleanup_orphans())"
