# tests/programs/: tiny programs with known allocation sites for the tracer's tests.
# Included by the top-level Makefile (which defines BUILD, ROOT, CC, WARN).
# -O1 keeps frames readable; no -fno-omit-frame-pointer on purpose (the tracer
# unwinds with DWARF CFI, and the tests should see the realistic case).
TP_SRCDIR := $(ROOT)/tests/programs
TP_OUTDIR := $(BUILD)/tests/programs
TP_OPT    := -O1 -g $(WARN)
TP_CFLAGS := -std=gnu11 $(TP_OPT)
TP_CXX    ?= $(CXX)
TP_FC     ?= gfortran
TP_MPICC  ?= mpicc
TP_DEPS   := $(TP_SRCDIR)/build.mk

# Plain C programs: name -> name.c, extra link flags per program below.
TP_C_PROGS := allfamily threads omp forker dlopen_main realloc_chain crash stress echo_io \
              small_objects refault no_perf static_arrays mmap_threshold hostile \
              thread_classes static_half papi_user
TP_LDLIBS_threads     := -pthread
TP_LDLIBS_papi_user   := -pthread -lpapi
TP_LDLIBS_thread_classes := -pthread
TP_LDLIBS_stress      := -pthread
TP_LDLIBS_dlopen_main := -ldl
TP_EXTRA_omp          := -fopenmp

TP_C_BINS := $(addprefix $(TP_OUTDIR)/,$(TP_C_PROGS))
TP_BINS   := $(TP_C_BINS) $(TP_OUTDIR)/allfamily-nopie $(TP_OUTDIR)/libdlalloc.so \
             $(TP_OUTDIR)/cxx_new $(TP_OUTDIR)/fortran_alloc $(TP_OUTDIR)/fortran_static

$(TP_C_BINS): $(TP_OUTDIR)/%: $(TP_SRCDIR)/%.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) $(TP_EXTRA_$*) -o $@ $< $(TP_LDLIBS_$*)

$(TP_OUTDIR)/allfamily-nopie: $(TP_SRCDIR)/allfamily.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -fno-pie -no-pie -o $@ $<

$(TP_OUTDIR)/libdlalloc.so: $(TP_SRCDIR)/dlopen_lib.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -fPIC -shared -o $@ $<

$(TP_OUTDIR)/cxx_new: $(TP_SRCDIR)/cxx_new.cpp $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_CXX) $(TP_OPT) -o $@ $<

# Sites that share their inner frames (a template and a wrapper in a shared library,
# like liblammps.so); the tests strip copies of both (labels from .dynsym, build-id
# debug files).
TP_BINS += $(TP_OUTDIR)/libcxxsites.so $(TP_OUTDIR)/cxx_sites
$(TP_OUTDIR)/libcxxsites.so: $(TP_SRCDIR)/cxx_sites_lib.cpp $(TP_SRCDIR)/cxx_sites.h $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_CXX) $(TP_OPT) -fPIC -shared -Wl,--build-id -o $@ $<

$(TP_OUTDIR)/cxx_sites: $(TP_SRCDIR)/cxx_sites.cpp $(TP_SRCDIR)/cxx_sites.h \
                        $(TP_OUTDIR)/libcxxsites.so $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_CXX) $(TP_OPT) -Wl,--build-id -o $@ $< -L$(TP_OUTDIR) -lcxxsites \
	  -Wl,-rpath,'$$ORIGIN'

$(TP_OUTDIR)/fortran_alloc: $(TP_SRCDIR)/fortran_alloc.f90 $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_FC) $(TP_OPT) -o $@ $<

# Static arrays of a Fortran code (a module array, a COMMON block); gfortran writes the
# module's .mod file into the current directory unless told: -J keeps it in the build.
$(TP_OUTDIR)/fortran_static: $(TP_SRCDIR)/fortran_static.f90 $(TP_DEPS)
	@mkdir -p $(@D)/mod
	$(TP_FC) $(TP_OPT) -J$(@D)/mod -o $@ $<

# MPI: only when an MPI C compiler wrapper is installed.
ifneq ($(shell command -v $(TP_MPICC) 2>/dev/null),)
TP_BINS += $(TP_OUTDIR)/mpi_alloc
$(TP_OUTDIR)/mpi_alloc: $(TP_SRCDIR)/mpi_alloc.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_MPICC) $(TP_CFLAGS) -o $@ $<
else
$(warning tests/programs: $(TP_MPICC) not found; not building mpi_alloc)
endif

# The software sampler's accuracy target: -O2 like a real application.
TP_BINS += $(TP_OUTDIR)/four_arrays
$(TP_OUTDIR)/four_arrays: $(TP_SRCDIR)/four_arrays.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread

# The software sampler's look ahead: -O2, so the divisions stay in registers.
TP_BINS += $(TP_OUTDIR)/compute_hot
$(TP_OUTDIR)/compute_hot: $(TP_SRCDIR)/compute_hot.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

# The software sampler's producer-load rule: -O2, as compute_hot.
TP_BINS += $(TP_OUTDIR)/consume_hot
$(TP_OUTDIR)/consume_hot: $(TP_SRCDIR)/consume_hot.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

# profile.csv: a large array whose hot loop touches a window of it (-O1, the default).
TP_BINS += $(TP_OUTDIR)/window_hot
$(TP_OUTDIR)/window_hot: $(TP_SRCDIR)/window_hot.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -o $@ $<

# One site per access kind (streaming, scattered, synchronization: issue 43); -O2
# like a real application.
TP_BINS += $(TP_OUTDIR)/kinds
$(TP_OUTDIR)/kinds: $(TP_SRCDIR)/kinds.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread

# Small-call sampling (collect/hmc_small.h): a sparse matrix of small row blocks from
# one site; -O2 like a real application.
TP_BINS += $(TP_OUTDIR)/sparse_rows
$(TP_OUTDIR)/sparse_rows: $(TP_SRCDIR)/sparse_rows.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $<

# The tracer's signals against the application's handlers and masks (issue 13): -O2
# like a real application, so the chase loads overwrite their address register and
# the sampler sets breakpoints. fortran_chase keeps gfortran's default flags on
# purpose: no -fno-backtrace (libgfortran then installs its own signal handlers).
TP_SIG_BINS := $(TP_OUTDIR)/sig_handlers $(TP_OUTDIR)/sig_blocked
TP_BINS += $(TP_SIG_BINS) $(TP_OUTDIR)/fortran_chase
$(TP_SIG_BINS): $(TP_OUTDIR)/%: $(TP_SRCDIR)/%.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g $(WARN) -o $@ $< -pthread

$(TP_OUTDIR)/fortran_chase: $(TP_SRCDIR)/fortran_chase.f90 $(TP_DEPS)
	@mkdir -p $(@D)
	$(TP_FC) -O2 -g -o $@ $<

# Static: only when the C library's static archive is available.
TP_LIBC_A := $(shell $(CC) -print-file-name=libc.a 2>/dev/null)
ifneq ($(filter /%,$(wildcard $(TP_LIBC_A))),)
TP_BINS += $(TP_OUTDIR)/static_app
$(TP_OUTDIR)/static_app: $(TP_SRCDIR)/static_app.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -static -o $@ $<
else
$(warning tests/programs: no static libc.a for $(CC); not building static_app)
endif

# Hostile processes for the preload libraries (issue 42): a daemon's start that closes
# every descriptor, a child of the raw clone system call, a program built with ASan.
TP_HOSTILE_BINS := $(TP_OUTDIR)/closefds $(TP_OUTDIR)/rawclone
TP_BINS += $(TP_HOSTILE_BINS)
$(TP_HOSTILE_BINS): $(TP_OUTDIR)/%: $(TP_SRCDIR)/%.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -o $@ $<

# AddressSanitizer: only when the compiler has its runtime.
TP_LIBASAN := $(shell $(CC) -print-file-name=libasan.so 2>/dev/null)
ifneq ($(filter /%,$(wildcard $(TP_LIBASAN))),)
TP_BINS += $(TP_OUTDIR)/asan_app
$(TP_OUTDIR)/asan_app: $(TP_SRCDIR)/asan_app.c $(TP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(TP_CFLAGS) -fsanitize=address -o $@ $<
else
$(warning tests/programs: no libasan.so for $(CC); not building asan_app)
endif

BUILD_TARGETS += $(TP_BINS)
