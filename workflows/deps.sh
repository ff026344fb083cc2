#!/usr/bin/env bash
# Idempotent install of everything hmtune needs: Debian packages (only the missing
# ones, so a second run does nothing) and the Python packages in ./.venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# hwloc-nox: lstopo-no-graphics, hwloc's view of the memory (hmtune machine, advise --mem).
# slurm-wlm (slurmctld, slurmd, srun, sbatch), slurm-wlm-basic-plugins (mpi_pmix: srun
# --mpi=pmix, what Debian's Open MPI needs) and munge: tests/py/test_slurm.py starts a
# private single-host Slurm cluster of its own (own munge key, config and ports; the
# packages' system services are not used) and runs hmtune under sbatch and srun.
debs=(gcc g++ make binutils-dev libnuma-dev numactl libmemkind-dev openmpi-bin
      libopenmpi-dev gfortran libcapstone-dev libunwind-dev libclang-rt-14-dev clang-14
      python3-venv zlib1g-dev hwloc-nox slurm-wlm slurm-wlm-basic-plugins munge)
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
