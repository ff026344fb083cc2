# ruff: noqa: F403, F405
# (Spack recipes take their directives from `from spack.package import *`.)
"""Spack recipe for hmtune. Not built with Spack in this repository's CI (no Spack
there): see README.md next to this file. It drives the same `make install` as a manual
installation, so the installed layout is the one README.md ("Installing") describes."""

from __future__ import annotations

from spack.package import *

try:  # Spack >= 1.0: build systems come from the builtin package repository
    from spack_repo.builtin.build_systems.makefile import MakefilePackage
except ImportError:  # Spack < 1.0: spack.package exports MakefilePackage
    pass


class Hmtune(MakefilePackage):
    """Finds the heap objects of an HPC application that belong in scarce fast memory
    (HBM, MCDRAM, DRAM in front of CXL/PMEM, hugepages) and places them there on the
    next run, without changing or recompiling the application: an LD_PRELOAD
    allocation tracer with data-address sampling (Paraver traces), per-site metrics,
    an ILP placement advisor and an LD_PRELOAD placement interposer."""

    # Placeholder: point it at where hmtune is published (or a site mirror).
    homepage = "https://github.com/hmtune/hmtune"
    git = "https://github.com/hmtune/hmtune.git"

    version("main", branch="main")

    variant(
        "memkind",
        default=True,
        description="memkind:KIND tiers (HBM, MCDRAM, DAX KMEM) in libhmalloc.so, "
        "which dlopen()s libmemkind.so.0 at run time",
    )
    variant(
        "highs",
        default=False,
        description="HiGHS (highspy) as the advisor's MIP solver when PuLP's CBC cannot run",
    )

    depends_on("c", type="build")
    depends_on("gmake", type="build")

    # C: the preload libraries and helper programs (collect/, interpose/, analyze/prvscan/,
    # workflows/rusage.c).
    depends_on("libunwind")
    depends_on("capstone")                 # the software sampler's instruction decoder
    depends_on("binutils+libiberty")       # libbfd: hmtune-finalize's symbol tables
    depends_on("zlib-api")                 # hmtune-prvscan reads .prv.gz
    # Not linked, dlopen()ed: a link dependency puts its lib/ in libhmalloc.so's RUNPATH.
    depends_on("memkind", when="+memkind", type="link")

    # Python: the hmtune CLI (the hmtune/ package); requirements.txt.
    extends("python")
    depends_on("python@3.11:", type=("build", "run"))
    depends_on("py-numpy", type=("build", "run"))
    depends_on("py-pandas", type=("build", "run"))
    depends_on("py-pulp", type=("build", "run"))
    depends_on("py-matplotlib", type=("build", "run"))
    depends_on("py-highspy", when="+highs", type=("build", "run"))

    sanity_check_is_file = [
        "bin/hmtune",
        "lib/libhmtrace.so",
        "lib/libhmalloc.so",
        "libexec/hmtune/hmtune-finalize",
        "libexec/hmtune/hmtune-probe",
        "libexec/hmtune/hmtune-prvscan",
        "libexec/hmtune/hmtune-rusage",
        "lib/hmtune/python/hmtune-installed",
    ]
    sanity_check_is_dir = ["share/hmtune/configs"]

    def build(self, spec: Spec, prefix: Prefix) -> None:
        """`make install` builds exactly what it installs. The default target (`make`,
        `make build`) also builds the C++, Fortran and MPI test programs, which hmtune
        itself does not need."""

    def install(self, spec: Spec, prefix: Prefix) -> None:
        """The Makefile's install target; PYTHON= is Spack's interpreter, which has the
        py-* dependencies, so no virtualenv is made under the prefix."""
        make("install", f"PREFIX={prefix}", f"PYTHON={spec['python'].command.path}")

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        """PATH only. Deliberately no LD_PRELOAD and no LD_LIBRARY_PATH: `hmtune trace`
        and `hmtune run` preload their libraries (by absolute path) into the application
        they launch, and nothing else."""
        env.prepend_path("PATH", self.prefix.bin)
