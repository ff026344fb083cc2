#!/usr/bin/env bash
# make check-packaging: the release installed the ways an HPC centre installs it, each
# then used from a clean environment (env -i, module load) through the whole loop
# (trace -> analyze -> advise -> run on the bundled example):
#   1. Lmod (Debian's lmod package, installed when missing; root only);
#   2. EasyBuild 5 from PyPI into a throw-away virtualenv;
#   3. make dist (twice: byte for byte the same), and the Spack recipe and the
#      easyconfig name its checksum;
#   4. eb packaging/easybuild/hmtune-VERSION.eb from the tarball, its dependencies
#      filtered to the system's (as root with --allow-use-as-root-and-accept-consequences);
#      its sanity check runs hmtune --version and traces the example;
#   5. EasyBuild's module, loaded by Lmod in a clean shell: the loop;
#   6. make install from the unpacked tarball (no git) into a temporary prefix;
#   7. its Lua modulefile and 8. its Tcl modulefile, each alone: the loop.
# Everything goes under one temporary directory (HOME too, so pip's cache and
# EasyBuild's files land there), removed at the end (KEEP=1 keeps it). Needs the
# network for PyPI (EasyBuild; the requirements in the installations' virtualenvs).
# Prints each step, its time and its log's tail when it fails, then a summary; exit 0
# when every step passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$root/pyproject.toml" | head -1)
name=hmtune-$version
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hmtune-check-packaging.XXXXXX")
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then echo "check-packaging: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
mkdir -p "$tmp/home" "$tmp/logs"
CLEAN=(env -i PATH=/usr/bin:/bin HOME="$tmp/home" LANG=C.UTF-8 TMPDIR="$tmp")
FILTER=Python,SciPy-bundle,matplotlib,PuLP,libunwind,Capstone,PAPI,binutils,zlib
t_start=$(date +%s)
results=()
failed=0
lmod_init=

# step NAME COMMAND...: run it, log to $tmp/logs, say PASS/FAIL and the time.
step() {
  local title=$1 log n=$((${#results[@]} + 1)) t0 rc
  shift
  log=$tmp/logs/$n.log
  echo "== [$n] $title"
  t0=$(date +%s)
  "$@" > "$log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0))
  if [ $rc -eq 0 ]; then
    results+=("PASS  ${took}s  $title")
    echo "   pass (${took}s)"
  else
    results+=("FAIL  ${took}s  $title")
    failed=$((failed + 1))
    echo "   FAIL (${took}s, exit $rc); the end of its log:"
    tail -25 "$log" | sed 's/^/   | /'
  fi
  return $rc
}

find_lmod() {
  local p
  for p in "${LMOD_PKG:-/nonexistent}/init/bash" /usr/share/lmod/lmod/init/bash \
           /opt/apps/lmod/lmod/init/bash; do
    [ -f "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}

get_lmod() {
  if ! find_lmod; then
    [ "$(id -u)" = 0 ] || { echo "Lmod is missing and only root can install it"; return 1; }
    echo "installing Debian's lmod package"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q lmod || return 1
    find_lmod || return 1
  fi
}

get_easybuild() {
  "${CLEAN[@]}" /usr/bin/python3 -m venv "$tmp/eb-venv" &&
    "${CLEAN[@]}" "$tmp/eb-venv/bin/pip" install -q --disable-pip-version-check \
      'easybuild>=5,<6' &&
    "${CLEAN[@]}" EB_PYTHON="$tmp/eb-venv/bin/python" "$tmp/eb-venv/bin/eb" --version
}

dist() {
  make -C "$root" --no-print-directory dist DIST="$tmp/dist" &&
    make -C "$root" --no-print-directory dist DIST="$tmp/dist2" > /dev/null &&
    cmp "$tmp/dist/$name.tar.gz" "$tmp/dist2/$name.tar.gz" &&
    echo "built twice: the same bytes" &&
    grep -q "names this tarball" < <(make -C "$root" --no-print-directory dist \
      DIST="$tmp/dist2" | grep packaging/spack/package.py) &&
    grep -q "names this tarball" < <(make -C "$root" --no-print-directory dist \
      DIST="$tmp/dist2" | grep "packaging/easybuild/$name.eb") &&
    echo "the Spack recipe and the easyconfig name its sha256"
}

# The loop, as a user types it once hmtune is on PATH (in a fresh directory).
LOOP='set -e
hmtune --version
here=$(dirname "$(command -v hmtune)")/..
app="$here/libexec/hmtune/examples/latency -s 64"
cd "$(mktemp -d)"
hmtune trace -q -o out -- $app
hmtune analyze out
hmtune advise out --machine "$here/share/hmtune/configs/machines/vm-thp.toml" --mem 16M
hmtune run -o out -- $app
test -s out/run-stats.json && test -s out/placement.txt && echo "the loop ran in $PWD"'

# module_loop MODULEPATH: Lmod in a clean shell, module load hmtune, the loop.
module_loop() {
  "${CLEAN[@]}" bash --noprofile --norc -c "source '$lmod_init' && module use '$1' &&
    module load hmtune && module list 2>&1 && module --redirect show hmtune | head -12 &&
    $LOOP"
}

eb_install() {
  mkdir -p "$tmp/sources/h/hmtune" && cp "$tmp/dist/$name.tar.gz" "$tmp/sources/h/hmtune/" &&
    "${CLEAN[@]}" EB_PYTHON="$tmp/eb-venv/bin/python" bash --noprofile --norc -c \
      "source '$lmod_init' && '$tmp/eb-venv/bin/eb' '$root/packaging/easybuild/$name.eb' \
        --prefix='$tmp/eb' --sourcepath='$tmp/sources' --buildpath='$tmp/eb-build' \
        --tmpdir='$tmp/eb-tmp' --filter-deps=$FILTER \
        $( [ "$(id -u)" = 0 ] && echo --allow-use-as-root-and-accept-consequences )"
}

make_install() {
  mkdir -p "$tmp/src" && tar -xzf "$tmp/dist/$name.tar.gz" -C "$tmp/src" &&
    [ ! -e "$tmp/src/$name/.git" ] &&
    "${CLEAN[@]}" make -C "$tmp/src/$name" --no-print-directory install PREFIX="$tmp/prefix"
}

tcl_only() {   # the Tcl modulefile alone (next to the Lua one, Lmod takes that)
  mkdir -p "$tmp/tcl/hmtune" &&
    cp "$tmp/prefix/share/modulefiles/hmtune/$version" "$tmp/tcl/hmtune/" &&
    module_loop "$tmp/tcl"
}

echo "check-packaging: hmtune $version, in $tmp"
if step "Lmod" get_lmod; then lmod_init=$(find_lmod); fi
step "EasyBuild 5 from PyPI in a throw-away virtualenv" get_easybuild
step "make dist: reproducible, named by the recipe and the easyconfig" dist
if [ -f "$tmp/dist/$name.tar.gz" ] && [ -n "$lmod_init" ] && [ -x "$tmp/eb-venv/bin/eb" ]; then
  step "EasyBuild install of $name.eb (dependencies filtered: $FILTER)" eb_install &&
    step "EasyBuild's module in a clean environment: the loop" module_loop "$tmp/eb/modules/all"
fi
if [ -f "$tmp/dist/$name.tar.gz" ]; then
  step "make install from the unpacked tarball (no git)" make_install
  if [ -n "$lmod_init" ] && [ -x "$tmp/prefix/bin/hmtune" ]; then
    step "make install's Lua modulefile in a clean environment: the loop" \
      module_loop "$tmp/prefix/share/modulefiles"
    step "make install's Tcl modulefile in a clean environment: the loop" tcl_only
  fi
fi

echo
echo "check-packaging summary (hmtune $version, $(($(date +%s) - t_start))s in all):"
printf '  %s\n' "${results[@]}"
expected=8
if [ "$failed" -eq 0 ] && [ "${#results[@]}" -eq $expected ]; then
  echo "check-packaging: PASS"
  exit 0
fi
echo "check-packaging: FAIL ($failed failed, $((expected - ${#results[@]})) not run)"
exit 1
