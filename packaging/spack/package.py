# ruff: noqa: F403, F405
# (Spack recipes take their directives from `from spack.package import *`.)
# No `from __future__ import annotations`: Spack 0.x puts `from spack.package import *`
# in front of a recipe's text, and a __future__ import must come first. Annotations are
# strings: Spack 0.x's spack.package exports no Prefix.
"""Spack recipe for hmtune (README.md next to this file: what was and was not exercised,
and how to install from the release tarball on an offline cluster). It drives the same
`make install` as a manual installation, so the installed layout is the one README.md
("Installing") describes."""

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

    # Where releases are published (`make dist` writes the tarball): a site mirror or a
    # local one (`spack mirror create`) serves the same file without changing this.
    homepage = "https://github.com/hmtune/hmtune"
    url = "https://github.com/hmtune/hmtune/releases/download/v0.1.0/hmtune-0.1.0.tar.gz"

    # The checksum of `make dist`'s tarball (make dist-record writes it here).
    version("0.1.0", sha256="c1501f4ad7bebf329501a63a4d92f8c52ffd4f4da689a580cfe47fba6892c361")

    variant(
        "memkind",
        default=True,
        description="memkind:KIND tiers (HBM, MCDRAM, DAX KMEM) in libhmalloc.so, "
        "which dlopen()s libmemkind.so.0 at run time",
    )
    variant(
        "highs",
        default=False,
        description="HiGHS (pulp.HiGHS through highspy) as the advisor's MIP solver "
        "besides CBC (hmtune advise --solver highs)",
    )

    depends_on("c", type="build")
    depends_on("gmake", type="build")

    # C: the preload libraries and helper programs (collect/, interpose/, analyze/prvscan/,
    # workflows/rusage.c).
    depends_on("libunwind")
    depends_on("capstone")                 # the software sampler's instruction decoder
    depends_on("papi@7:")                  # hmtune trace --counters (papi.h; loaded at run time)
    depends_on("binutils")                 # libbfd: hmtune-finalize's symbol tables
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
    # pulp.HiGHS appeared in PuLP 2.8; it drives HiGHS through highspy.
    depends_on("py-pulp@2.8:", when="+highs", type=("build", "run"))
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

    def build(self, spec: "Spec", prefix: "Prefix") -> None:
        """`make install` builds exactly what it installs. The default target (`make`,
        `make build`) also builds the C++, Fortran and MPI test programs, which hmtune
        itself does not need."""

    def install(self, spec: "Spec", prefix: "Prefix") -> None:
        """The Makefile's install target with PYTHON= Spack's interpreter: no virtualenv
        is made, and the directories that interpreter finds the py-* dependencies in
        (PYTHONPATH in Spack's build environment) are recorded in the installation, so
        the installed hmtune runs without `spack load` or a module."""
        make("install", f"PREFIX={prefix}", f"PYTHON={spec['python'].command.path}")

    @run_after("install")
    def check_clean_environment(self) -> None:
        """The installed hmtune in an environment without Spack's (a user's shell with no
        `spack load`): its version, and with +highs a HiGHS the advisor can use."""
        clean = {"PATH": "/usr/bin:/bin"}
        hmtune = Executable(join_path(self.prefix.bin, "hmtune"))
        said = hmtune("--version", output=str, env=clean).strip()
        if said != f"hmtune {self.spec.version}":
            raise InstallError(f"the installed hmtune says {said!r}, not hmtune "
                               f"{self.spec.version}")
        if self.spec.satisfies("+highs"):
            python = Executable(self.spec["python"].command.path)
            why = python("-P", "-c", "from hmtune.advisor.solve import mip; "
                         "print(mip.unusable('highs') or '')", output=str,
                         env=dict(clean, PYTHONPATH=join_path(self.prefix.lib, "hmtune",
                                                               "python"))).strip()
            if why:
                raise InstallError(f"+highs: the advisor cannot use HiGHS: {why}")

    def setup_run_environment(self, env: "EnvironmentModifications") -> None:
        """PATH only. Deliberately no LD_PRELOAD and no LD_LIBRARY_PATH: `hmtune trace`
        and `hmtune run` preload their libraries (by absolute path) into the application
        they launch, and nothing else."""
        env.prepend_path("PATH", self.prefix.bin)
