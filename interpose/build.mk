# interpose/: the placement interposer (libhmalloc.so, DESIGN.md §6): a PIC core
# archive (parser, matcher, backends) that tests link, and the preload library.
HMI_DIR      := $(BUILD)/interpose
HMI_CORE_SRC := $(ROOT)/interpose/hmi_placement.c $(ROOT)/interpose/hmi_placement_load.c \
                $(ROOT)/interpose/hmi_placement_lines.c $(ROOT)/interpose/hmi_reader.c \
                $(ROOT)/interpose/hmi_fields.c
HMI_CORE_HDR := $(ROOT)/interpose/hmi_placement.h $(ROOT)/interpose/hmi_fields.h \
                $(ROOT)/interpose/hmi_placement_data.h $(ROOT)/interpose/hmi_placement_lines.h \
                $(ROOT)/interpose/hmi_reader.h
# The site matcher: placement chains -> tier, with a per-thread cache (hmi_match.h).
HMI_CORE_SRC += $(ROOT)/interpose/hmi_match.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_match.h
HMI_CORE_LIB := $(HMI_DIR)/libhmi_core.a
# Tier backends: entry points and dispatch (hmi_backend.c), spec parsing (hmi_spec.c),
# the tier table and its counters (hmi_capacity.c), charging a block (hmi_charge.c),
# reasons (hmi_msg.c), NUMA node lists (hmi_nodes.c), the page map (hmi_pagemap.c),
# mmap blocks and chunks (hmi_mmap.c), split objects (hmi_split.c), freed blocks kept
# for reuse (hmi_keep.c), dlopen'ed memkind (hmi_backend_memkind.c), the small-object
# arena (hmi_arena.c) and its size classes (hmi_classes.c), and dlopen'ed UMF's pools
# (hmi_backend_umf.c; its providers and the tiers' opening: hmi_umf_providers.c); what
# a tier is to all of them: hmi_tiers.h. Users link -ldl -lpthread.
HMI_CORE_SRC += $(ROOT)/interpose/hmi_backend.c $(ROOT)/interpose/hmi_spec.c \
                $(ROOT)/interpose/hmi_capacity.c $(ROOT)/interpose/hmi_msg.c \
                $(ROOT)/interpose/hmi_pagemap.c $(ROOT)/interpose/hmi_mmap.c \
                $(ROOT)/interpose/hmi_split.c $(ROOT)/interpose/hmi_backend_memkind.c \
                $(ROOT)/interpose/hmi_arena.c $(ROOT)/interpose/hmi_keep.c \
                $(ROOT)/interpose/hmi_classes.c $(ROOT)/interpose/hmi_nodes.c \
                $(ROOT)/interpose/hmi_charge.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_backend.h $(ROOT)/interpose/hmi_backend_int.h \
                $(ROOT)/interpose/hmi_pagemap.h $(ROOT)/interpose/hmi_mmap.h \
                $(ROOT)/interpose/hmi_arena.h $(ROOT)/interpose/hmi_umf.h \
                $(ROOT)/interpose/hmi_tiers.h $(ROOT)/interpose/hmi_classes.h \
                $(ROOT)/interpose/hmi_capacity.h $(ROOT)/interpose/hmi_charge.h
# Static variables of placement.txt's static lines, bound or remapped at start-up
# (hmi_static.c) once their module's segments and symbol tables vouch for them
# (hmi_static_elf.c).
HMI_CORE_SRC += $(ROOT)/interpose/hmi_static.c $(ROOT)/interpose/hmi_static_elf.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_static.h $(ROOT)/interpose/hmi_static_int.h
# fork: a child's private copies of the hugetlb mappings it inherits (hmi_fork.c);
# hugetlb memory put back in ordinary pages (hmi_demote.c).
HMI_CORE_SRC += $(ROOT)/interpose/hmi_fork.c $(ROOT)/interpose/hmi_demote.c
HMI_CORE_HDR += $(ROOT)/interpose/hmi_fork.h $(ROOT)/interpose/hmi_demote.h

# UMF (the umf:* backends, hmi_backend_umf.c): its headers at build time, libumf.so.1
# dlopen'ed at run time (never linked), first by the absolute path found here, then by
# the loader's search path. Found through pkg-config (libumf.pc, e.g. oneAPI's) or
# UMF's CMake package config (lib/cmake/umf/umf-config.cmake, as in the pinned wheel
# that `make deps` unpacks into .deps/umf-1.2.0); UMF_ROOT=PREFIX names another install.
UMF_ROOT ?= $(ROOT)/.deps/umf-1.2.0
UMF_PC   := $(wildcard $(UMF_ROOT)/lib/pkgconfig/libumf.pc $(UMF_ROOT)/share/pkgconfig/libumf.pc)
UMF_CMAKE := $(wildcard $(UMF_ROOT)/lib/cmake/umf/umf-config.cmake)
ifneq ($(UMF_PC),)
UMF_INC  := $(shell PKG_CONFIG_PATH=$(dir $(firstword $(UMF_PC))) pkg-config --variable=includedir libumf)
UMF_LIBDIR := $(shell PKG_CONFIG_PATH=$(dir $(firstword $(UMF_PC))) pkg-config --variable=libdir libumf)
else ifneq ($(UMF_CMAKE),)
# the config's PACKAGE_PREFIX_DIR is three levels up; include/ and lib/ below it
UMF_PREFIX := $(abspath $(dir $(UMF_CMAKE))/../../..)
UMF_INC  := $(UMF_PREFIX)/include
UMF_LIBDIR := $(UMF_PREFIX)/lib
endif
UMF_SO   := $(if $(UMF_LIBDIR),$(UMF_LIBDIR)/libumf.so.1)
UMF_CFLAGS := $(if $(UMF_INC),-isystem $(UMF_INC) -DHMI_UMF_LIB='"$(UMF_SO)"')
UMF_MISSING := UMF not found (no libumf.pc or umf-config.cmake under $(UMF_ROOT)): run 'make deps' (installs UMF 1.2.0 into .deps/umf-1.2.0) or set UMF_ROOT=PREFIX
# Without UMF the umf:* backends are left out (hmi_umf_absent.c: their tiers are
# unavailable, saying how to get UMF); `make umf-check` says whether it was found.
UMF_FOUND := $(if $(UMF_INC),$(wildcard $(UMF_INC)/umf.h))
ifneq ($(UMF_FOUND),)
HMI_CORE_SRC += $(ROOT)/interpose/hmi_backend_umf.c $(ROOT)/interpose/hmi_umf_providers.c
else
HMI_CORE_SRC += $(ROOT)/interpose/hmi_umf_absent.c
# make test and make demo run deps first and build in a make that reads this again
ifeq ($(filter test demo,$(MAKECMDGOALS)),)
$(info $(UMF_MISSING); building libhmalloc.so without the umf: backends)
endif
endif
.PHONY: umf-check
umf-check:
	@if [ -z "$(UMF_FOUND)" ]; then echo "$(UMF_MISSING)" >&2; exit 1; fi

$(HMI_DIR)/%.o: $(ROOT)/interpose/%.c $(HMI_CORE_HDR) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -I$(ROOT)/interpose $(UMF_CFLAGS) -c -o $@ $<

$(HMI_CORE_LIB): $(patsubst $(ROOT)/interpose/%.c,$(HMI_DIR)/%.o,$(HMI_CORE_SRC))
	@rm -f $@
	ar rcs $@ $^

BUILD_TARGETS += $(HMI_CORE_LIB)

# The preload library: the malloc family (hmi_shim.c), its bootstrap and options
# (hmi_boot.c), what every entry point reads (hmi_entry.c), the run's counters
# (hmi_report.c) and exit report (hmi_report_exit.c), the checks that a placement is
# this process's (hmi_accept.c), madvise and mprotect over placed hugetlb memory
# (hmi_advise.c), and the descriptor wrappers (hmi_fdshim.c).
HMI_SHIM_SRC := $(ROOT)/interpose/hmi_shim.c $(ROOT)/interpose/hmi_boot.c \
                $(ROOT)/interpose/hmi_report.c $(ROOT)/interpose/hmi_report_exit.c \
                $(ROOT)/interpose/hmi_accept.c $(ROOT)/interpose/hmi_advise.c \
                $(ROOT)/interpose/hmi_fdshim.c $(ROOT)/interpose/hmi_entry.c
HMI_SHIM_HDR := $(ROOT)/interpose/hmi_boot.h $(ROOT)/interpose/hmi_entry.h \
                $(ROOT)/interpose/hmi_report.h $(ROOT)/interpose/hmi_report_int.h \
                $(ROOT)/interpose/hmi_accept.h $(ROOT)/interpose/hmi_advise.h
HMALLOC_SO   := $(BUILD)/lib/libhmalloc.so
$(HMALLOC_SO): $(HMI_SHIM_SRC) $(HMI_SHIM_HDR) $(HMI_CORE_LIB) $(HMI_CORE_HDR) $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(ROOT)/interpose -fPIC -shared -fvisibility=hidden \
	  -ftls-model=initial-exec -o $@ $(HMI_SHIM_SRC) $(HMI_CORE_LIB) $(COMMON_SRC) \
	  -Wl,-z,defs -lunwind -ldl -lpthread $(LDSAN)

BUILD_TARGETS += $(HMALLOC_SO)

# libFuzzer target (make fuzz): clang-14 with its own sanitizer flags, never SAN=1's.
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 60
HMI_FUZZ_DIR := $(ROOT)/build/fuzz
HMI_FUZZ_BIN := $(HMI_FUZZ_DIR)/fuzz_placement

$(HMI_FUZZ_BIN): $(ROOT)/interpose/fuzz_placement.c $(HMI_CORE_SRC) $(HMI_CORE_HDR) \
    $(COMMON_SRC) $(COMMON_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu11 -O1 -g $(WARN) -D_GNU_SOURCE -I$(ROOT)/common -I$(ROOT)/interpose $(UMF_CFLAGS) \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ $< $(HMI_CORE_SRC) $(COMMON_SRC) -lunwind -ldl
