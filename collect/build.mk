# collect/: libhmtrace.so (preload tracer) and hmtune-finalize (out of process).
HMC_LIB_SRC  := $(ROOT)/collect/hmc_core.c $(ROOT)/collect/hmc_shim.c $(COMMON_SRC)
HMC_LIB_HDR  := $(wildcard $(ROOT)/collect/*.h) $(COMMON_HDR)
HMC_FIN_SRC  := $(wildcard $(ROOT)/collect/finalize/*.c)
HMC_FIN_HDR  := $(wildcard $(ROOT)/collect/finalize/*.h) $(ROOT)/collect/hmc_stream.h

$(BUILD)/lib/libhmtrace.so: $(HMC_LIB_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec \
	  -o $@ $(HMC_LIB_SRC) -Wl,-z,defs -lunwind -ldl -lpthread $(LDSAN)

$(BUILD)/bin/hmtune-finalize: $(HMC_FIN_SRC) $(HMC_FIN_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/collect/finalize -o $@ $(HMC_FIN_SRC) -lbfd $(LDSAN)

BUILD_TARGETS += $(BUILD)/lib/libhmtrace.so $(BUILD)/bin/hmtune-finalize

# The same library with UBSan (ASan cannot host a malloc interposer): the tests
# preload it after libubsan.so and run real programs through it.
$(BUILD)/lib/libhmtrace-ubsan.so: $(HMC_LIB_SRC) $(HMC_LIB_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -shared -fvisibility=hidden -ftls-model=initial-exec \
	  -fsanitize=undefined -fno-sanitize-recover=undefined \
	  -o $@ $(HMC_LIB_SRC) -lunwind -ldl -lpthread

BUILD_TARGETS += $(BUILD)/lib/libhmtrace-ubsan.so
