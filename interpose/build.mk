# interpose/: the placement interposer (libhmalloc.so, DESIGN.md §6). So far only its
# core, the placement.txt parser, as a PIC archive that tests and the library link.
HMI_DIR      := $(BUILD)/interpose
HMI_CORE_SRC := $(ROOT)/interpose/hmi_placement.c $(ROOT)/interpose/hmi_fields.c
HMI_CORE_HDR := $(ROOT)/interpose/hmi_placement.h $(ROOT)/interpose/hmi_fields.h
# The site matcher: placement chains -> tier, with a per-thread cache (hmi_match.h).
HMI_CORE_SRC += $(ROOT)/interpose/hmi_match.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_match.h
HMI_CORE_LIB := $(HMI_DIR)/libhmi_core.a
# Tier backends (hmi_backend*.c): mmap/hugetlb/thp/numa and dlopen'ed memkind; users link -ldl.
HMI_CORE_SRC += $(ROOT)/interpose/hmi_backend.c $(ROOT)/interpose/hmi_backend_memkind.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_backend.h $(ROOT)/interpose/hmi_backend_int.h

$(HMI_DIR)/%.o: $(ROOT)/interpose/%.c $(HMI_CORE_HDR) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -I$(ROOT)/interpose -c -o $@ $<

$(HMI_CORE_LIB): $(patsubst $(ROOT)/interpose/%.c,$(HMI_DIR)/%.o,$(HMI_CORE_SRC))
	@rm -f $@
	ar rcs $@ $^

BUILD_TARGETS += $(HMI_CORE_LIB)

# libFuzzer target (make fuzz): clang-14 with its own sanitizer flags, never SAN=1's.
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 60
HMI_FUZZ_DIR := $(ROOT)/build/fuzz
HMI_FUZZ_BIN := $(HMI_FUZZ_DIR)/fuzz_placement

$(HMI_FUZZ_BIN): $(ROOT)/interpose/fuzz_placement.c $(HMI_CORE_SRC) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -I$(ROOT)/common -I$(ROOT)/interpose \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $< $(HMI_CORE_SRC) $(COMMON_SRC) -lunwind -ldl
