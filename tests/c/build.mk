# tests/c: core tests linked without LD_PRELOAD (STYLE.md: the core is testable
# on its own). `make test-c` runs them; `make test-c SAN=1` under ASan+UBSan.
TEST_C_DIR := $(BUILD)/tests/c
TEST_C_CFLAGS := $(CFLAGS_COMMON) -I$(ROOT)/tests/c -I$(ROOT)/collect/finalize -pthread

$(TEST_C_DIR)/test_util: $(ROOT)/tests/c/test_util.c $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The HMTUNE_* options table (common/hm_options.c).
$(TEST_C_DIR)/test_options: $(ROOT)/tests/c/test_options.c $(COMMON_SRC) $(COMMON_HDR) \
    $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The tracer core: the process stream and lifecycle (hmc_core.c), the per-thread
# buffers (hmc_buffers.c), the records and stack table (hmc_records.c), the stream
# file (hmc_file.c).
HMC_CORE_SRC := $(ROOT)/collect/hmc_core.c $(ROOT)/collect/hmc_buffers.c \
                $(ROOT)/collect/hmc_records.c $(ROOT)/collect/hmc_file.c
$(TEST_C_DIR)/test_core: $(ROOT)/tests/c/test_core.c $(HMC_CORE_SRC) \
    $(ROOT)/collect/finalize/fin_raw.c $(COMMON_SRC) $(HMC_LIB_HDR) $(HMC_FIN_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -rdynamic -o $@ $< $(HMC_CORE_SRC) \
	  $(ROOT)/collect/finalize/fin_raw.c $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# PEBS/IBS sampling (collect/hmc_perf*.c) on fake sysfs trees and synthetic rings.
HMC_PERF_SRC ?= $(wildcard $(ROOT)/collect/hmc_perf*.c)
$(TEST_C_DIR)/test_perf: $(ROOT)/tests/c/test_perf.c $(HMC_PERF_SRC) $(COMMON_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(HMC_PERF_SRC) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The software sampler's address decoder on hand-assembled instructions.
HMC_DEC_SRC := $(ROOT)/collect/hmc_decode.c $(ROOT)/collect/hmc_dec.c $(ROOT)/collect/hmc_insn.c \
               $(ROOT)/collect/hmc_behind.c $(ROOT)/collect/hmc_stride.c
$(TEST_C_DIR)/test_decode: $(ROOT)/tests/c/test_decode.c $(HMC_DEC_SRC) $(COMMON_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(HMC_DEC_SRC) $(COMMON_SRC) -lcapstone -lunwind -ldl $(LDSAN)

# The decoder's strided-access class on hand-assembled loops (collect/hmc_stride.c).
$(TEST_C_DIR)/test_stride: $(ROOT)/tests/c/test_stride.c $(HMC_DEC_SRC) $(COMMON_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(HMC_DEC_SRC) $(COMMON_SRC) -lcapstone -lunwind -ldl $(LDSAN)

# The producer-load rule (collect/hmc_behind.c) on hand-assembled instruction sequences.
$(TEST_C_DIR)/test_behind: $(ROOT)/tests/c/test_behind.c $(HMC_DEC_SRC) $(COMMON_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(HMC_DEC_SRC) $(COMMON_SRC) -lcapstone -lunwind -ldl $(LDSAN)

# The interposer's placement.txt parser (interpose/hmi_placement.c).
$(TEST_C_DIR)/test_placement: $(ROOT)/tests/c/test_placement.c $(HMI_CORE_LIB) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR) $(wildcard $(ROOT)/tests/c/data/placement_*.txt)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -DHMT_DATA_DIR='"$(ROOT)/tests/c/data"' -o $@ $< \
	  $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The reader's verdict per file (placement_verdict.c), for tests/py/test_placement_grammar.py.
# Not test_*: run.sh runs those.
$(TEST_C_DIR)/placement_verdict: $(ROOT)/tests/c/placement_verdict.c $(HMI_CORE_LIB) \
    $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) \
	  -lunwind -ldl $(LDSAN)
BUILD_TARGETS += $(TEST_C_DIR)/placement_verdict

# Static variables placed by the interposer (interpose/hmi_static.c), on the test's own
# arrays.
$(TEST_C_DIR)/test_static: $(ROOT)/tests/c/test_static.c $(HMI_CORE_LIB) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The interposer's tier backends (interpose/hmi_backend*.c).
$(TEST_C_DIR)/test_backend: $(ROOT)/tests/c/test_backend.c $(ROOT)/tests/c/smaps_split.h \
    $(HMI_CORE_LIB) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The small-object arena's chunks against the advisor's model at 1, 4 and 16 threads,
# and the reasons counted for requests that did not fit (interpose/hmi_arena.c).
$(TEST_C_DIR)/test_arena: $(ROOT)/tests/c/test_arena.c $(HMI_CORE_LIB) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# Freed blocks kept for reuse (interpose/hmi_keep.c), through the backends' entry points.
$(TEST_C_DIR)/test_keep: $(ROOT)/tests/c/test_keep.c $(ROOT)/tests/c/smaps_split.h \
    $(HMI_CORE_LIB) $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The umf:* backends (interpose/hmi_backend_umf.c), and the same tests built with a
# libumf.so.1 path that names no file (test_umf_missing: the tier is unavailable with
# the way to install UMF). The second links its own hmi_backend_umf.o before the core
# archive, whose member of that name is then never pulled in.
$(TEST_C_DIR)/test_umf: $(ROOT)/tests/c/test_umf.c $(HMI_CORE_LIB) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -o $@ $< $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)
$(TEST_C_DIR)/umf_missing.o: $(ROOT)/interpose/hmi_backend_umf.c $(HMI_CORE_HDR) | umf-check
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/interpose -isystem $(UMF_INC) \
	  -DHMI_UMF_LIB='"/nonexistent/hmtune-test/libumf.so.1"' -c -o $@ $<
$(TEST_C_DIR)/test_umf_missing: $(ROOT)/tests/c/test_umf.c $(TEST_C_DIR)/umf_missing.o \
    $(HMI_CORE_LIB) $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -DHMT_UMF_MISSING -I$(ROOT)/interpose -o $@ $< \
	  $(TEST_C_DIR)/umf_missing.o $(HMI_CORE_LIB) $(COMMON_SRC) -lunwind -ldl $(LDSAN)

# The interposer's site matcher (interpose/hmi_match.c), inside a shared library of
# its own (libtm_match.so) so that its frames are removed as libhmalloc.so's are;
# libtm_dl.so is dlopen'ed by the test. (lib*, not test_*: run.sh runs test_*.)
TM_MATCH_SO := $(TEST_C_DIR)/libtm_match.so
TM_DL_SO    := $(TEST_C_DIR)/libtm_dl.so
$(TM_MATCH_SO): $(ROOT)/tests/c/match_shim.c $(ROOT)/tests/c/match_shim.h $(HMI_CORE_LIB) \
    $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -I$(ROOT)/interpose -fPIC -shared -o $@ $< $(HMI_CORE_LIB) \
	  $(COMMON_SRC) -lunwind -ldl $(LDSAN)
$(TM_DL_SO): $(ROOT)/tests/c/match_dl.c
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -fPIC -shared -o $@ $< $(LDSAN)
$(TEST_C_DIR)/test_match: $(ROOT)/tests/c/test_match.c $(ROOT)/tests/c/match_shim.h $(TM_MATCH_SO) \
    $(TM_DL_SO)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -rdynamic -DTM_DL_PATH='"$(TM_DL_SO)"' -o $@ $< -L$(TEST_C_DIR) \
	  -ltm_match -Wl,-rpath,$(TEST_C_DIR) -ldl $(LDSAN)

# libhmalloc.so end to end (test_hmalloc.c): the application it is preloaded into,
# the library it links whose constructor allocates early, the library it dlopens,
# and the probe that learns the application's call-site chains. Names not starting with test_: run.sh runs test_*. The driver
# depends on the libhmalloc.so of the same BUILD (build-san's under SAN=1).
HMA_APP   := $(TEST_C_DIR)/hmalloc_app
HMA_DL_SO := $(TEST_C_DIR)/libhmalloc_dl.so
HMA_EARLY_SO := $(TEST_C_DIR)/libhmalloc_early.so
HMA_PROBE := $(TEST_C_DIR)/libsite_probe.so
# The probe is never instrumented: under ASan its malloc is called by ASan's own
# initialization (dlsym), before the shadow memory exists.
HMA_PROBE_CFLAGS := $(filter-out -fsanitize=%,$(TEST_C_CFLAGS))
$(HMA_EARLY_SO): $(ROOT)/tests/c/hmalloc_early.c $(ROOT)/tests/c/hmalloc_app.h
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -fPIC -shared -o $@ $< $(LDSAN)
$(HMA_APP): $(ROOT)/tests/c/hmalloc_app.c $(ROOT)/tests/c/hmalloc_app.h \
    $(ROOT)/tests/c/smaps_split.h $(HMA_EARLY_SO)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< -L$(TEST_C_DIR) -lhmalloc_early -Wl,-rpath,$(TEST_C_DIR) \
	  -ldl $(LDSAN)
$(HMA_DL_SO): $(ROOT)/tests/c/hmalloc_dl.c
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -fPIC -shared -o $@ $< $(LDSAN)
$(HMA_PROBE): $(ROOT)/tests/c/site_probe.c $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(HMA_PROBE_CFLAGS) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec -o $@ $< \
	  $(COMMON_SRC) -Wl,-z,defs -lunwind -ldl
# What must survive the end of a placed process (test_hmalloc's exit-safety cases): a
# C++ program (static destructors), the library it links and the plugin it dlopens.
EXIT_APP       := $(TEST_C_DIR)/exit_app
EXIT_NEEDED_SO := $(TEST_C_DIR)/libexit_needed.so
EXIT_PLUGIN_SO := $(TEST_C_DIR)/libexit_plugin.so
EXIT_CXXFLAGS  := -std=gnu++17 -O2 -g $(WARN) -pthread $(filter -fsanitize% -fno-%,$(CFLAGS_COMMON))
$(EXIT_NEEDED_SO): $(ROOT)/tests/c/exit_needed.c
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -fPIC -shared -o $@ $< $(LDSAN)
$(EXIT_PLUGIN_SO): $(ROOT)/tests/c/exit_plugin.c
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -fPIC -shared -o $@ $< $(LDSAN)
$(EXIT_APP): $(ROOT)/tests/c/exit_app.cpp $(EXIT_NEEDED_SO)
	@mkdir -p $(@D)
	$(CXX) $(EXIT_CXXFLAGS) -o $@ $< -L$(TEST_C_DIR) -lexit_needed -Wl,-rpath,$(TEST_C_DIR) \
	  -ldl $(LDSAN)
$(TEST_C_DIR)/test_hmalloc: $(ROOT)/tests/c/test_hmalloc.c $(ROOT)/tests/c/hmalloc_app.h \
    $(ROOT)/tests/c/hmt.h $(HMA_APP) $(HMA_EARLY_SO) $(HMA_DL_SO) $(HMA_PROBE) $(HMALLOC_SO) \
    $(EXIT_APP) $(EXIT_PLUGIN_SO)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -DHMT_APP='"$(HMA_APP)"' -DHMT_DL='"$(HMA_DL_SO)"' \
	  -DHMT_EARLY='"$(HMA_EARLY_SO)"' -DHMT_PROBE='"$(HMA_PROBE)"' \
	  -DHMT_HMALLOC='"$(HMALLOC_SO)"' -DHMT_EXIT_APP='"$(EXIT_APP)"' \
	  -DHMT_EXIT_PLUGIN='"$(EXIT_PLUGIN_SO)"' -o $@ $< $(LDSAN)

TEST_C_BINS := $(TEST_C_DIR)/test_util $(TEST_C_DIR)/test_options $(TEST_C_DIR)/test_core $(TEST_C_DIR)/test_perf \
               $(TEST_C_DIR)/test_decode $(TEST_C_DIR)/test_stride $(TEST_C_DIR)/test_behind \
               $(TEST_C_DIR)/test_placement \
               $(PRVSCAN_TESTS)
TEST_C_BINS += $(TEST_C_DIR)/test_backend $(TEST_C_DIR)/test_keep $(TEST_C_DIR)/test_static
TEST_C_BINS += $(TEST_C_DIR)/test_arena
TEST_C_BINS += $(TEST_C_DIR)/test_umf $(TEST_C_DIR)/test_umf_missing
TEST_C_BINS += $(TEST_C_DIR)/test_match
TEST_C_BINS += $(TEST_C_DIR)/test_hmalloc

# Small-call sampling's parser, countdown, gaps and block marks (collect/hmc_small.c).
$(TEST_C_DIR)/test_small: $(ROOT)/tests/c/test_small.c $(ROOT)/collect/hmc_small.c \
    $(ROOT)/collect/hmc_small.h $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(TEST_C_CFLAGS) -o $@ $< $(ROOT)/collect/hmc_small.c $(COMMON_SRC) -lunwind -ldl \
	  -lm $(LDSAN)
TEST_C_BINS += $(TEST_C_DIR)/test_small
BUILD_TARGETS += $(TEST_C_BINS)

test-c: $(TEST_C_BINS)
	@$(ROOT)/tests/one_run.sh $(ROOT)/tests/c/run.sh $(TEST_C_DIR)

