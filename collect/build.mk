# collect/: libhmtrace.so (preload tracer) and hmtune-finalize (out of process).
HMC_PERF_SRC := $(wildcard $(ROOT)/collect/hmc_perf*.c)
HMC_LIB_SRC  := $(filter-out $(ROOT)/collect/hmc_probe.c,$(wildcard $(ROOT)/collect/hmc_*.c)) \
                $(COMMON_SRC)
HMC_LIBS     := -lunwind -lcapstone -ldl -lpthread -lm
HMC_LIB_HDR  := $(wildcard $(ROOT)/collect/*.h) $(COMMON_HDR)
HMC_FIN_SRC  := $(wildcard $(ROOT)/collect/finalize/*.c)
HMC_FIN_HDR  := $(wildcard $(ROOT)/collect/finalize/*.h) $(ROOT)/collect/hmc_stream.h

$(BUILD)/lib/libhmtrace.so: $(HMC_LIB_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec \
	  -o $@ $(HMC_LIB_SRC) -Wl,-z,defs $(HMC_LIBS) $(LDSAN)

# HMTUNE_DEBUG_ROOT comes from the options table (common/hm_options.c, which logs
# through hm_util.c).
HMC_FIN_COMMON := $(ROOT)/common/hm_options.c $(ROOT)/common/hm_util.c
$(BUILD)/bin/hmtune-finalize: $(HMC_FIN_SRC) $(HMC_FIN_HDR) $(HMC_FIN_COMMON) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/collect/finalize -o $@ $(HMC_FIN_SRC) $(HMC_FIN_COMMON) \
	  -lbfd $(LDSAN)

$(BUILD)/bin/hmtune-probe: $(ROOT)/collect/hmc_probe.c $(HMC_PERF_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -o $@ $(ROOT)/collect/hmc_probe.c $(HMC_PERF_SRC) \
	  $(ROOT)/collect/hmc_papi.c $(COMMON_SRC) \
	  -lunwind -ldl $(LDSAN)

BUILD_TARGETS += $(BUILD)/lib/libhmtrace.so $(BUILD)/bin/hmtune-finalize $(BUILD)/bin/hmtune-probe

# The same library with UBSan (ASan cannot host a malloc interposer): the tests
# preload it after libubsan.so and run real programs through it.
$(BUILD)/lib/libhmtrace-ubsan.so: $(HMC_LIB_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec \
	  -fsanitize=undefined -fno-sanitize-recover=undefined \
	  -o $@ $(HMC_LIB_SRC) $(HMC_LIBS)

BUILD_TARGETS += $(BUILD)/lib/libhmtrace-ubsan.so
