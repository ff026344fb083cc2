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
SMALL_SAMPLE ?=
DEPTH   ?=

.PHONY: all deps build contract test test-steps test-c test-py lint demo trace analyze rerun bench-collect \
        bench-sampling bench-analyze bench-advise bench-kinds clean
all: build

deps:
	@$(ROOT)/workflows/deps.sh

include common/build.mk
include interpose/build.mk
include collect/build.mk
include examples/build.mk
include tests/programs/build.mk
include analyze/prvscan/build.mk
include tests/c/build.mk
include bench/build.mk
include workflows/build.mk

build: $(BUILD_TARGETS)

# One test run per host at a time (tests/one_run.sh: they share the hugepage pool).
test: deps
	@$(ROOT)/tests/one_run.sh $(MAKE) --no-print-directory test-steps

test-steps:
	@$(MAKE) --no-print-directory build
	@echo "== C tests"
	@$(MAKE) --no-print-directory test-c
	@echo "== C tests under ASan/UBSan"
	@$(MAKE) --no-print-directory SAN=1 test-c
	@echo "== Python tests"
	@$(MAKE) --no-print-directory test-py

PY_DIRS := $(wildcard hmtune tests bench packaging)

test-py: build
	@$(PY) -m ruff check $(PY_DIRS)
	@$(ROOT)/tests/one_run.sh $(PY) -m pytest -q tests/py

lint:
	@$(PY) -m ruff check $(PY_DIRS)

# The trace contract: common/hm_events.h and hmtune/core/events.py from
# common/trace_events.tsv and common/trace_values.tsv (both committed;
# tests/py/test_contract.py checks them).
contract:
	@$(PY) -m hmtune.core.contract $(ROOT)

demo: deps
	@$(MAKE) --no-print-directory build
	@$(ROOT)/workflows/demo.sh

trace: deps build
	@if [ -z "$(APP)" ]; then echo 'make trace: set APP, e.g. make trace APP="./build/examples/latency"' >&2; exit 2; fi
	@$(HMTUNE) trace $(if $(OUT),-o "$(OUT)") $(if $(MPIRUN),--mpirun "$(MPIRUN)") \
	  $(if $(MIN_SIZE),--min-size $(MIN_SIZE)) $(if $(DEPTH),--depth $(DEPTH)) \
	  $(if $(SMALL_SAMPLE),--small-sample $(SMALL_SAMPLE)) \
	  $(if $(SAMPLER),--sampler $(SAMPLER)) $(if $(PERIOD),--period $(PERIOD)) \
	  $(if $(RATE),--rate $(RATE)) $(if $(FAULT_PERIOD),--fault-period $(FAULT_PERIOD)) -- $(APP)

# trace → sites.csv + allocs.csv, next to the trace. Which trace: TRACE, else the one
# in OUT, else hmtune-out/<APP's name>/, else the most recently written hmtune-out/*/.
TRACE   ?=
PER_RANK ?=
STAGE_DIR = $(or $(OUT),$(if $(APP),hmtune-out/$(notdir $(firstword $(APP)))),$(shell ls -td hmtune-out/*/ 2>/dev/null | head -1))
analyze: deps build
	@t="$(or $(TRACE),$(STAGE_DIR))"; \
	if [ -z "$$t" ]; then echo 'make analyze: no trace yet: run make trace APP=..., or set TRACE=FILE.prv' >&2; exit 2; fi; \
	$(HMTUNE) analyze $(if $(PER_RANK),--per-rank) "$$t"

# sites.csv → placement.txt, report.txt, capacity_curve.csv/.png, in the same stage
# directory as analyze (OUT, else hmtune-out/<APP's name>/, else the newest hmtune-out/*/);
# analyzes the trace first when sites.csv is missing or older than it.
# MEM=SIZE alone: SIZE per process of this host's fastest tier (HBM or MCDRAM, else DRAM in
# front of CXL/NVM, else 2 MiB hugepages or THP; see make machine); FRACTION=F instead of
# MEM: F of the traced footprint; MACHINE=FILE.toml: its tiers (MEM or FRACTION then
# resizes its fastest tier). FORMAT=flexmalloc also writes FlexMalloc's two files.
MEM     ?=
MACHINE ?=
STRATEGY ?=
THRESHOLD ?=
FORMAT  ?=
# What this host offers as fast memory (hmtune machine); TOML=1: the machine file for it.
TOML    ?=
.PHONY: machine
machine: deps build
	@$(HMTUNE) machine $(if $(TOML),--toml)

.PHONY: advise
advise: deps build
	@d="$(STAGE_DIR)"; \
	if [ -z "$(MEM)$(FRACTION)$(MACHINE)" ]; then echo 'make advise: set MEM=SIZE (e.g. MEM=256M), FRACTION=F (e.g. FRACTION=0.4) or MACHINE=configs/machines/NAME.toml' >&2; exit 2; fi; \
	if [ -n "$$d" ] && [ -f "$$d/trace.prv" ] && { [ ! -f "$$d/sites.csv" ] || [ "$$d/trace.prv" -nt "$$d/sites.csv" ]; }; then \
	  $(HMTUNE) analyze "$$d" || exit $$?; fi; \
	if [ -z "$$d" ] || [ ! -f "$$d/sites.csv" ]; then echo "make advise: no sites.csv$${d:+ in $$d} and no trace to analyze: run make trace APP=... first" >&2; exit 2; fi; \
	$(HMTUNE) advise $(if $(MEM),--mem "$(MEM)") $(if $(FRACTION),--fraction $(FRACTION)) \
	  $(if $(MACHINE),--machine "$(MACHINE)") \
	  $(if $(STRATEGY),--strategy $(STRATEGY)) $(if $(THRESHOLD),--threshold $(THRESHOLD)) \
	  $(if $(FORMAT),--format $(FORMAT)) "$$d"

# Re-run APP (required: the command, as for make trace) with libhmalloc.so and the
# stage directory's placement.txt (OUT, else hmtune-out/<APP's name>/) or PLACEMENT=FILE.
# Statistics: STAGE/run-stats.json (run-stats.RANK.json per rank with MPIRUN).
# RESERVE=1: as root, reserve the hugepages the placement's hugetlb tiers need for the
# length of the run (hmtune run --reserve-hugepages) and put the pools back afterwards;
# without root it prints the command that would, and runs anyway.
PLACEMENT ?=
RESERVE ?=
rerun: deps build
	@if [ -z "$(APP)" ]; then echo 'make rerun: set APP to the command to re-run, e.g. make rerun APP="./build/examples/latency -s 256"' >&2; exit 2; fi
	@$(HMTUNE) run -o "$(STAGE_DIR)" $(if $(MPIRUN),--mpirun "$(MPIRUN)") \
	  $(if $(PLACEMENT),--placement "$(PLACEMENT)") $(if $(RESERVE),--reserve-hugepages) \
	  -- $(APP)

# APP under all-slow, first-come, size-window, the advisor's strategies and all-fast, in
# interleaved rounds (REPEATS=N, or auto: until every 95 % interval is within +-TARGET %,
# default 3, or BUDGET, default 20m, is spent), in the stage directory's compare/
# (runs.csv, summary.csv, result.json); finished runs are skipped unless FORCE=1.
# MEM=SIZE or FRACTION=F (default 0.4 of the footprint); several, comma-separated (MEM=14M,29M),
# measured in the same rounds.
FRACTION ?=
REPEATS ?=
TARGET  ?=
BUDGET  ?=
FOM     ?=
STRATEGIES ?=
FORCE   ?=
.PHONY: compare
compare: deps build
	@if [ -z "$(APP)" ]; then echo 'make compare: set APP, e.g. make compare APP="./build/examples/latency -s 256" FOM="kernel_time_s=([0-9.]+)"' >&2; exit 2; fi
	@$(HMTUNE) compare -o "$(STAGE_DIR)" $(if $(MEM),--mem "$(MEM)") \
	  $(if $(FRACTION),--fraction $(FRACTION)) $(if $(MACHINE),--machine "$(MACHINE)") \
	  $(if $(REPEATS),--repeats $(REPEATS)) $(if $(TARGET),--target $(TARGET)) \
	  $(if $(BUDGET),--budget $(BUDGET)) $(if $(FOM),--fom '$(FOM)') \
	  $(if $(STRATEGIES),--strategies $(STRATEGIES)) $(if $(FORCE),--force) \
	  --reserve-hugepages -- $(APP)

# Every placement of the top K sites plus one group for the rest (2^(K+1)), in
# interleaved rounds as compare (REPEATS, TARGET, BUDGET), resumable (FORCE=1 redoes
# them), in the stage directory's explore/ (placements.csv, runs.csv, summary.csv,
# result.json, summary.png). Without APP: the latency example at -s 512 -n 1 in
# hmtune-out/latency (traced first when it has no sites.csv). MEM/FRACTION: the
# capacity the advisor's own choice is held to.
K       ?= 7
EXPLORE_APP := $(BUILD)/examples/latency -s 512 -n 1
EXPLORE_FOM := kernel_time_s=([0-9.]+)
.PHONY: explore
explore: deps build
	@if [ -n "$(APP)" ]; then app='$(APP)'; d="$(STAGE_DIR)"; fom='$(FOM)'; \
	else app='$(EXPLORE_APP)'; d="$(or $(OUT),hmtune-out/latency)"; fom='$(or $(FOM),$(EXPLORE_FOM))'; \
	  if [ ! -f "$$d/sites.csv" ]; then \
	    $(HMTUNE) trace -q -o "$$d" -- $$app > /dev/null && $(HMTUNE) analyze "$$d" || exit 1; fi; \
	fi; \
	$(HMTUNE) explore -o "$$d" -k $(K) $(if $(MEM),--mem "$(MEM)") \
	  $(if $(FRACTION),--fraction $(FRACTION)) $(if $(MACHINE),--machine "$(MACHINE)") \
	  $(if $(REPEATS),--repeats $(REPEATS)) $(if $(TARGET),--target $(TARGET)) \
	  $(if $(BUDGET),--budget $(BUDGET)) $${fom:+--fom "$$fom"} \
	  $(if $(STRATEGY),--strategy $(STRATEGY)) $(if $(FORCE),--force) \
	  --reserve-hugepages -- $$app

# One page (STAGE/report/report.md + PNGs) from what the stage directory holds.
.PHONY: report
report: deps
	@d="$(STAGE_DIR)"; \
	if [ -z "$$d" ]; then echo 'make report: no stage directory yet: run make trace APP=... and make analyze' >&2; exit 2; fi; \
	$(HMTUNE) report "$$d"

# How to open the trace in Paraver with configs/paraver/ (printed commands).
.PHONY: view
view: deps
	@t="$(or $(TRACE),$(STAGE_DIR))"; \
	if [ -z "$$t" ]; then echo 'make view: no trace yet: run make trace APP=..., or set TRACE=FILE.prv' >&2; exit 2; fi; \
	$(HMTUNE) view "$$t"

bench-collect: deps build
	@$(PY) $(ROOT)/bench/bench_collect.py

bench-sampling: deps build
	@$(PY) $(ROOT)/bench/bench_sampling.py

# Real applications from Debian packages (LAMMPS LJ and EAM, HPC Challenge on 2 ranks,
# NWChem SCF), end to end with 95 % intervals: bench/results/apps-DATE-HOST.md/.png.
# BENCH_ARGS: e.g. --only hpcc, --quick (small inputs), --budget 20m (per code).
BENCH_ARGS ?=
.PHONY: bench-apps
bench-apps: deps build
	@bash $(ROOT)/bench/apps/deps.sh
	@$(PY) $(ROOT)/bench/bench_apps.py $(BENCH_ARGS)

# Access kinds on Debian's HPC Challenge: STREAM's arrays streaming, RandomAccess's
# tables scattered (bench/bench_kinds.py).
bench-kinds: deps build
	@bash $(ROOT)/bench/apps/deps.sh
	@$(PY) $(ROOT)/bench/bench_kinds.py

# Placement strategies on seeded random instances: time, value, bound, gap per target.
bench-advise: deps
	@$(PY) $(ROOT)/bench/bench_advise.py

# hmtune analyze on generated 10 M-record traces: records/s of CPU, peak RSS.
bench-analyze: deps build
	@$(PY) $(ROOT)/bench/bench_analyze.py

# libFuzzer on the placement.txt parser for FUZZ_SECONDS (default 60); not in make test.
# Seeds: tests/c/data; new inputs and crashes go to build/fuzz/.
.PHONY: fuzz
fuzz: $(HMI_FUZZ_BIN)
	@mkdir -p $(HMI_FUZZ_DIR)/corpus
	$(HMI_FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -print_final_stats=1 \
	  -dict=$(ROOT)/interpose/fuzz_placement.dict -artifact_prefix=$(HMI_FUZZ_DIR)/ \
	  $(HMI_FUZZ_DIR)/corpus $(ROOT)/tests/c/data

# Libraries, helpers, CLI, configurations and examples into PREFIX (DESTDIR stages them);
# PYTHON=INTERPRETER that has the requirements, else a virtualenv under PREFIX.
# Layout: workflows/install.sh; docs/guide.md "Installing".
PREFIX  ?= /usr/local
DESTDIR ?=
PYTHON  ?=
# What install.sh copies (only these are built: `make build` also needs MPI and Fortran).
INSTALL_BUILT := $(BUILD)/lib/libhmtrace.so $(HMALLOC_SO) $(BUILD)/bin/hmtune-finalize \
                 $(BUILD)/bin/hmtune-probe $(BUILD)/bin/hmtune-prvscan \
                 $(BUILD)/bin/hmtune-rusage $(EX_PROGS)
.PHONY: install
install: $(INSTALL_BUILT)
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" PYTHON="$(PYTHON)" BUILD="$(BUILD)" \
	  $(ROOT)/workflows/install.sh

clean:
	rm -rf build build-san hmtune-out

# --- Releases and packaging (packaging/, docs/guide.md "Installing") ---------------------
# The release: `version` in pyproject.toml, set there only. The C programs that write it
# (hmtune-finalize: the .pcf and the summary; libhmalloc.so: the statistics JSON) get it
# as HMTUNE_VERSION (common/hm_version.h) and are rebuilt when pyproject.toml changes.
HMTUNE_VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' $(ROOT)/pyproject.toml | head -1)
CFLAGS_COMMON  += -DHMTUNE_VERSION='"$(HMTUNE_VERSION)"'
$(BUILD)/bin/hmtune-finalize $(HMALLOC_SO): $(ROOT)/pyproject.toml

# hmtune-VERSION.tar.gz and .sha256 in DIST (default build/dist), reproducible byte for
# byte (packaging/dist.sh); MIRROR=DIR also puts it where a Spack mirror holds it
# (Spack 1.x's _source-cache layout and the older one); dist-record also writes the
# checksum into the Spack recipe and the easyconfig.
DIST    ?=
.PHONY: dist dist-record check-packaging
MIRROR  ?=
dist:
	@DIST="$(DIST)" MIRROR="$(MIRROR)" $(ROOT)/packaging/dist.sh
dist-record:
	@DIST="$(DIST)" RECORD=1 $(ROOT)/packaging/dist.sh

# The release installed as a centre would: EasyBuild (5, from PyPI, in a throw-away
# virtualenv) with Lmod, and make install, each module loaded in a clean environment
# and the loop run (packaging/check.sh; not part of make test).
check-packaging:
	@$(ROOT)/packaging/check.sh
