# analyze/prvscan/: hmtune-prvscan (the analyzer's streaming C core), the synthetic
# trace generator used by its tests and benchmark, and the C test.
# Included by the top Makefile, which defines ROOT, BUILD, CC, CFLAGS_COMMON, LDSAN
# and BUILD_TARGETS. The test directory is spelled out (not $(TEST_C_DIR)) so this
# file works whether it is included before or after tests/c/build.mk.
PRVSCAN_DIR  := $(ROOT)/analyze/prvscan
PRVSCAN_SRC  := $(filter-out $(PRVSCAN_DIR)/gen_%.c,$(wildcard $(PRVSCAN_DIR)/ps_*.c))
PRVSCAN_HDR  := $(PRVSCAN_DIR)/ps.h $(ROOT)/common/hm_events.h
GENTRACE_SRC := $(wildcard $(PRVSCAN_DIR)/gen_*.c)
GENTRACE_HDR := $(wildcard $(PRVSCAN_DIR)/gen_*.h) $(PRVSCAN_HDR)

$(BUILD)/bin/hmtune-prvscan: $(PRVSCAN_SRC) $(PRVSCAN_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(PRVSCAN_DIR) -o $@ $(PRVSCAN_SRC) -lz -lm $(LDSAN)

$(BUILD)/bin/hmtune-gentrace: $(GENTRACE_SRC) $(GENTRACE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(PRVSCAN_DIR) -o $@ $(GENTRACE_SRC) -lm $(LDSAN)

BUILD_TARGETS += $(BUILD)/bin/hmtune-prvscan $(BUILD)/bin/hmtune-gentrace

# The test runs the two binaries above (they are prerequisites, so `make test-c`
# builds them, under ASan/UBSan too with SAN=1) on fixtures and generated traces.
PRVSCAN_TESTS := $(BUILD)/tests/c/test_prvscan
$(BUILD)/tests/c/test_prvscan: $(ROOT)/tests/c/test_prvscan.c $(ROOT)/tests/c/hmt.h \
    $(BUILD)/bin/hmtune-prvscan $(BUILD)/bin/hmtune-gentrace
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/tests/c -DHMT_ROOT='"$(ROOT)"' -DHMT_BIN='"$(BUILD)/bin"' \
	  -o $@ $< $(LDSAN)
