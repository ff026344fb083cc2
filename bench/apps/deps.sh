#!/usr/bin/env bash
# make bench-apps: the Debian packages of the real applications (idempotent: installs
# only what is missing; never part of make deps or make test).
set -euo pipefail
want=(lammps lammps-examples hpcc nwchem nwchem-data openmpi-bin bwa)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "make bench-apps: missing Debian packages: ${missing[*]}; as root: apt-get install -y ${missing[*]}" >&2
    exit 2
fi
echo "make bench-apps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null || {
    apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
