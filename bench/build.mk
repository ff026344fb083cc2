# bench/: benchmark programs (never run by make test).
$(BUILD)/bench/mallocbench: $(ROOT)/bench/mallocbench.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread

BUILD_TARGETS += $(BUILD)/bench/mallocbench

$(BUILD)/bench/rsswrap: $(ROOT)/bench/rsswrap.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 $(WARN) -o $@ $<

BUILD_TARGETS += $(BUILD)/bench/rsswrap

# hmallocbench: malloc+free pairs from one site, or memkind called directly
# (bench_interpose.py; libmemkind.so.0 is dlopen'ed, not linked; libunwind for the
# unwind:N mode).
$(BUILD)/bench/hmallocbench: $(ROOT)/bench/hmallocbench.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread -ldl -lunwind

BUILD_TARGETS += $(BUILD)/bench/hmallocbench

# libhmalloc.so's costs per malloc+free pair against baselines (issue 6's targets:
# outside the size window, matched site over memkind's own cost, 1 vs 2 threads),
# then where a matched pair's time goes. Never part of make test.
.PHONY: bench-interpose
bench-interpose: deps build
	@$(PY) $(ROOT)/bench/bench_interpose.py

# What a split allocation (only part of the object in the tier) adds over the same
# object placed whole, per backend and object size (issue 19's cost target).
.PHONY: bench-split
bench-split: deps build
	@$(PY) $(ROOT)/bench/bench_split.py $(BENCH_ARGS)

# What libhmalloc adds per allocation on a real code (BWA-MEM): an unmatched call looked
# up, a matched call placed, a call placed by HMTUNE_BASELINE=all; the advisor's
# alloc_cost_ns. Needs bwa (bench/apps/deps.sh). Never part of make test.
.PHONY: bench-callcost
bench-callcost: deps build
	@bash $(ROOT)/bench/apps/deps.sh
	@$(PY) $(ROOT)/bench/bench_callcost.py $(BENCH_ARGS)

# faultcost: first-touch cost per page size and what a 2 MiB page saves per 4 KiB fault
# (the fault_cost_ns of configs/machines/vm-*.toml).
$(BUILD)/bench/faultcost: $(ROOT)/bench/faultcost.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

BUILD_TARGETS += $(BUILD)/bench/faultcost

# tlbspan: what 2 MiB pages gain on access as a function of the span accessed (a
# dependent random chase, 4 KiB against hugetlb pages), and with --part what placing
# part of one uniformly accessed object gains.
$(BUILD)/bench/tlbspan: $(ROOT)/bench/tlbspan.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

BUILD_TARGETS += $(BUILD)/bench/tlbspan

# The hugepages tlbspan needs (128 of 2 MiB) are added to the pool for its run and put
# back (root); BENCH_ARGS: ROUNDS [ACCESSES], or --part SPAN_MIB [ROUNDS [ACCESSES]].
# Never part of make test.
.PHONY: bench-tlbspan
bench-tlbspan: build
	@old=$$(cat /proc/sys/vm/nr_hugepages); \
	if ! echo $$((old + 130)) > /proc/sys/vm/nr_hugepages 2>/dev/null; then \
	  echo "bench-tlbspan: cannot add 130 hugepages to the pool (run as root)" >&2; exit 2; fi; \
	$(BUILD)/bench/tlbspan $(BENCH_ARGS); rc=$$?; \
	echo $$old > /proc/sys/vm/nr_hugepages; exit $$rc

# hotwindow: a large array with a hot window inside it beside warm arrays (bench-apps'
# object-splitting case).
$(BUILD)/bench/hotwindow: $(ROOT)/bench/hotwindow.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

BUILD_TARGETS += $(BUILD)/bench/hotwindow

# tiershare: the share of a tier usable before a request is refused, per backend, on
# the interposer's core (bench_umf.py).
$(BUILD)/bench/tiershare: $(ROOT)/bench/tiershare.c $(HMI_CORE_LIB) $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl -lpthread $(LDSAN)
BUILD_TARGETS += $(BUILD)/bench/tiershare

# umfpools: UMF's disjoint and scalable pools on the same memory (bench_umf.py); linked
# with libumf from `make deps` (libhmalloc.so only dlopens it).
$(BUILD)/bench/umfpools: $(ROOT)/bench/umfpools.c | umf-check
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -isystem $(UMF_INC) -o $@ $< -L$(UMF_LIBDIR) -lumf \
	  -Wl,-rpath,$(UMF_LIBDIR)
ifneq ($(UMF_FOUND),)
BUILD_TARGETS += $(BUILD)/bench/umfpools
endif

# Per backend (hugetlb and its arena, memkind's hugepage kind, numa:0, umf:numa:0,
# umf:hugetlb): the cost a matched malloc+free adds at 1 and 2 threads, the share of
# the tier usable for single sizes and a mix, and the exit-time matrix (issue 20's
# table in docs/formats.md §6). Never part of make test.
.PHONY: bench-umf
bench-umf: deps build
	@$(PY) $(ROOT)/bench/bench_umf.py $(BENCH_ARGS)
