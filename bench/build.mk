# bench/: benchmark programs (never run by make test).
$(BUILD)/bench/mallocbench: $(ROOT)/bench/mallocbench.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread

BUILD_TARGETS += $(BUILD)/bench/mallocbench

$(BUILD)/bench/rsswrap: $(ROOT)/bench/rsswrap.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 $(WARN) -o $@ $<

BUILD_TARGETS += $(BUILD)/bench/rsswrap
