# examples/: small real programs used by the demo and the pipeline tests.
# Included by the top-level Makefile (which defines BUILD, ROOT, CC, WARN).
EX_SRCDIR := $(ROOT)/examples
EX_OUTDIR := $(BUILD)/examples
EX_CFLAGS := -std=gnu11 -O2 -g $(WARN)
EX_PROGS  := $(addprefix $(EX_OUTDIR)/,latency stream histogram hashjoin)

BUILD_TARGETS += $(EX_PROGS)

$(EX_PROGS): $(EX_OUTDIR)/%: $(EX_SRCDIR)/%.c $(EX_SRCDIR)/ex_common.h $(EX_SRCDIR)/build.mk
	@mkdir -p $(@D)
	$(CC) $(EX_CFLAGS) -o $@ $< -lm
