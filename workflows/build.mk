# workflows/: hmtune-rusage, the small parent compare and explore run each measured run
# under (a child's peak RSS is only its own when its parent is small: workflows/rusage.c).
$(BUILD)/bin/hmtune-rusage: $(ROOT)/workflows/rusage.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LDSAN)

BUILD_TARGETS += $(BUILD)/bin/hmtune-rusage
