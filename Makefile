# hmtune — top-level entry points. See README.md; every target is a thin wrapper
# over ./bin/hmtune or a build rule.
SHELL   := /bin/bash
ROOT    := $(abspath .)
BUILD   := $(ROOT)/build
PY      := $(ROOT)/.venv/bin/python
HMTUNE  := $(ROOT)/bin/hmtune

CC      ?= gcc
WARN    := -Wall -Wextra -Werror
CFLAGS_COMMON := -std=gnu11 -O2 -g $(WARN) -D_GNU_SOURCE -I$(ROOT)/common -I$(ROOT)/collect
# Extra flags for sanitizer builds (make SAN=1 ...): objects go to build-san/.
ifeq ($(SAN),1)
BUILD   := $(ROOT)/build-san
CFLAGS_COMMON += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDSAN   := -fsanitize=address,undefined
endif

# User-facing knobs (DESIGN.md §7).
APP     ?=
MPIRUN  ?=
SAMPLER ?=
OUT     ?=
MIN_SIZE ?=
DEPTH   ?=

.PHONY: all deps build test test-c test-py lint demo trace bench-collect bench-sampling clean
all: build

deps:
	@$(ROOT)/workflows/deps.sh

include common/build.mk
include collect/build.mk
include examples/build.mk
include tests/programs/build.mk
include tests/c/build.mk
include bench/build.mk

build: $(BUILD_TARGETS)

test: deps
	@$(MAKE) --no-print-directory build
	@echo "== C tests"
	@$(MAKE) --no-print-directory test-c
	@echo "== C tests under ASan/UBSan"
	@$(MAKE) --no-print-directory SAN=1 test-c
	@echo "== Python tests"
	@$(MAKE) --no-print-directory test-py

PY_DIRS := $(wildcard analyze advisor workflows tests bench)

test-py: build
	@$(PY) -m ruff check $(PY_DIRS)
	@$(PY) -m pytest -q tests/py

lint:
	@$(PY) -m ruff check $(PY_DIRS)

demo: deps
	@$(MAKE) --no-print-directory build
	@$(ROOT)/workflows/demo.sh

trace: deps build
	@if [ -z "$(APP)" ]; then echo 'make trace: set APP, e.g. make trace APP="./build/examples/latency"' >&2; exit 2; fi
	@$(HMTUNE) trace $(if $(OUT),-o "$(OUT)") $(if $(MPIRUN),--mpirun "$(MPIRUN)") \
	  $(if $(MIN_SIZE),--min-size $(MIN_SIZE)) $(if $(DEPTH),--depth $(DEPTH)) \
	  $(if $(SAMPLER),--sampler $(SAMPLER)) $(if $(PERIOD),--period $(PERIOD)) \
	  $(if $(RATE),--rate $(RATE)) -- $(APP)

bench-collect: deps build
	@$(PY) $(ROOT)/bench/bench_collect.py

bench-sampling: deps build
	@$(PY) $(ROOT)/bench/bench_sampling.py

clean:
	rm -rf build build-san hmtune-out
