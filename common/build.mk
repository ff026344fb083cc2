# common/: C shared by collect and interpose, compiled into each preload library.
COMMON_SRC := $(wildcard $(ROOT)/common/*.c)
COMMON_HDR := $(wildcard $(ROOT)/common/*.h)
