#!/usr/bin/env bash
# Idempotent install of everything hmtune needs: Debian packages (only the missing
# ones, so a second run does nothing) and the Python packages in ./.venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# libhwloc15, libudev1: what libumf.so links (UMF, below).
# hwloc-nox: lstopo-no-graphics, hwloc's view of the memory (hmtune machine, advise --mem).
# slurm-wlm (slurmctld, slurmd, srun, sbatch), slurm-wlm-basic-plugins (mpi_pmix: srun
# --mpi=pmix, what Debian's Open MPI needs) and munge: tests/py/test_slurm.py starts a
# private single-host Slurm cluster of its own (own munge key, config and ports; the
# packages' system services are not used) and runs hmtune under sbatch and srun.
# lmod: tests/py/test_install_env.py loads make install's modulefiles (Lua and Tcl) in
# a clean shell. libpapi-dev: the tracer's counters (papi.h to build; libpapi7.0, which
# libhmtrace.so loads in a namespace of its own only when counters are asked for).
debs=(gcc g++ make binutils-dev libnuma-dev numactl libmemkind-dev openmpi-bin
      libopenmpi-dev gfortran libcapstone-dev libunwind-dev libclang-rt-14-dev clang-14
      python3-venv zlib1g-dev hwloc-nox libhwloc15 libudev1 slurm-wlm
      slurm-wlm-basic-plugins munge lmod libpapi-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "hmtune deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

py=${PYTHON:-python3}
stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "hmtune deps: installing Python packages into .venv"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi

# UMF (Intel's Unified Memory Framework), pinned, for the umf:* tier backends: the wheel
# on the Python package registry holds libumf.so, its headers and its CMake config
# (umf-1.2.0.data/data/{lib,include}), unpacked into .deps/umf-VERSION (git-ignored).
# libhmalloc.so dlopens it; the build reads the headers (interpose/build.mk).
umf_ver=1.2.0
umf_whl=umf-$umf_ver-py2.py3-none-manylinux_2_28_x86_64.whl
umf_sha=238d186fdd9e9c0fe1489da95b19b0b79045fe26c4aa98bd0a022a2a3603c195
umf_dir=.deps/umf-$umf_ver
if [ ! -f "$umf_dir/.installed" ]; then
  echo "hmtune deps: installing UMF $umf_ver into $umf_dir"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3 "umf==$umf_ver" -d "$tmp"
  got=$(sha256sum "$tmp/$umf_whl" | cut -d' ' -f1)
  if [ "$got" != "$umf_sha" ]; then
    echo "hmtune deps: $umf_whl has sha256 $got, not the pinned $umf_sha" >&2
    exit 1
  fi
  rm -rf "$umf_dir"
  mkdir -p "$umf_dir"
  "$py" - "$tmp/$umf_whl" "$umf_dir" "umf-$umf_ver.data/data/" <<'PYEOF'
import sys, zipfile
whl, dest, top = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    for m in z.infolist():
        if m.filename.startswith(top) and not m.is_dir():
            m.filename = m.filename[len(top):]
            z.extract(m, dest)
PYEOF
  # a wheel holds no symbolic links: the library is there three times
  (cd "$umf_dir/lib" && ln -sf "libumf.so.$umf_ver" libumf.so.1 && ln -sf libumf.so.1 libumf.so)
  chmod 755 "$umf_dir/lib/libumf.so.$umf_ver"
  touch "$umf_dir/.installed"
fi
