#!/usr/bin/env bash
# `make install`: copy the built libraries, helpers, CLI, configurations and examples
# into PREFIX (staged under DESTDIR when set), in the layout hmtune/core/paths.py expects:
#
#   PREFIX/bin/hmtune, hmtune-demo          the CLI and the demo (shell launchers)
#   PREFIX/lib/libhmtrace.so, libhmalloc.so the preload libraries
#   PREFIX/libexec/hmtune/                  hmtune-finalize, hmtune-probe, hmtune-prvscan,
#                                           hmtune-rusage
#   PREFIX/libexec/hmtune/examples/         latency, stream, histogram
#   PREFIX/lib/hmtune/python/hmtune/        the Python package (core, machine, analyze,
#                                           advisor, workflows)
#   PREFIX/lib/hmtune/venv/                 their requirements (only without PYTHON=)
#   PREFIX/share/hmtune/configs/            machines/*.toml, paraver/*.cfg
#   PREFIX/share/doc/hmtune/                README.md, guide.md, formats.md
#   PREFIX/share/modulefiles/hmtune/VERSION     a Tcl modulefile (Environment Modules,
#                                               Lmod): PATH only
#   PREFIX/share/modulefiles/hmtune/VERSION.lua the same for Lmod, which prefers it
#
# PYTHON=/path/to/python: use that interpreter, which must already have the
# requirements (numpy, pandas, PuLP, matplotlib); otherwise a virtualenv is made from
# python3 under PREFIX/lib/hmtune/venv and the runtime requirements of
# requirements.txt are pip-installed into it (skipped when already there).
# PYTHON=auto: python3 from PATH when it has the requirements, else that virtualenv.
# When PYTHON finds a requirement through PYTHONPATH (Spack's build environment, loaded
# modules), the directories it takes from there are recorded in
# PREFIX/lib/hmtune/python/hmtune-pythonpath, which the installed package puts on its
# own path (hmtune/__init__.py): the installed hmtune runs without that environment.
# Inputs (from the Makefile): PREFIX, DESTDIR, PYTHON, BUILD.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PREFIX:-/usr/local}
destdir=${DESTDIR:-}
build=${BUILD:-$root/build}

die() { echo "make install: $*" >&2; exit 1; }
case $prefix in /*) ;; *) die "PREFIX must be an absolute path (got '$prefix')" ;; esac
prefix=${prefix%/}
[ -n "$prefix" ] || die "PREFIX=/ is not supported: use /usr or /usr/local"
dest=$destdir$prefix
version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$root/pyproject.toml")

libs=(libhmtrace.so libhmalloc.so)
helpers=(hmtune-finalize hmtune-probe hmtune-prvscan hmtune-rusage)
examples=(latency stream histogram)
for f in "${libs[@]/#/lib/}" "${helpers[@]/#/bin/}" "${examples[@]/#/examples/}"; do
  [ -f "$build/$f" ] || die "$build/$f is not built: run 'make' first"
done

# The interpreter: PYTHON with the requirements (checked before anything is copied),
# or a virtualenv under PREFIX.
need_py='import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed"
import matplotlib, numpy, pandas, pulp'
if [ "${PYTHON:-}" = auto ]; then
  PYTHON=
  if command -v python3 > /dev/null && python3 -c "$need_py" 2> /dev/null; then
    PYTHON=$(command -v python3)
  fi
  echo "hmtune install: PYTHON=auto: ${PYTHON:-a virtualenv under PREFIX (python3 lacks the requirements)}"
fi
if [ -n "${PYTHON:-}" ]; then
  command -v "$PYTHON" > /dev/null || die "PYTHON=$PYTHON: no such interpreter"
  "$PYTHON" -c "$need_py" 2> /dev/null || die "PYTHON=$PYTHON lacks the requirements \
(Python >= 3.11 with numpy, pandas, PuLP, matplotlib): install them, or leave PYTHON \
unset to get a virtualenv under PREFIX"
  run_py=$("$PYTHON" -c 'import sys; print(sys.executable)')
fi

# The shell's single-quoted form of $1 (for the generated launchers).
shquote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

echo "hmtune install: into $dest"
install -d "$dest/bin" "$dest/lib" "$dest/libexec/hmtune/examples" "$dest/lib/hmtune" \
  "$dest/share/hmtune" "$dest/share/doc/hmtune" "$dest/share/modulefiles/hmtune"
for f in "${libs[@]}"; do install -m 755 "$build/lib/$f" "$dest/lib/$f"; done
for f in "${helpers[@]}"; do install -m 755 "$build/bin/$f" "$dest/libexec/hmtune/$f"; done
for f in "${examples[@]}"; do
  install -m 755 "$build/examples/$f" "$dest/libexec/hmtune/examples/$f"
done

# Configurations and docs: the directories are hmtune's own, so replace them whole.
rm -rf "$dest/share/hmtune/configs"
cp -R "$root/configs" "$dest/share/hmtune/configs"
chmod -R u+rwX,go+rX,go-w "$dest/share/hmtune/configs"
install -m 644 "$root/README.md" "$root/docs/guide.md" "$root/docs/formats.md" "$dest/share/doc/hmtune/"

# The Python package: only the .py files of hmtune/ and its subpackages.
pydir=$dest/lib/hmtune/python
rm -rf "$pydir"
install -d "$pydir"
(cd "$root" && find hmtune -name '*.py' -not -path '*/__pycache__/*') | while read -r f; do
  install -D -m 644 "$root/$f" "$pydir/$f"
done
echo "hmtune ${version:-unknown}: this tree was installed by make install" > "$pydir/hmtune-installed"

# The directories PYTHON imports the requirements from that it would not search in a
# clean environment (PYTHONPATH entries: Spack's build environment, loaded modules).
recorded_paths() {
  local bare path='import json, sys; print(json.dumps(sys.path))'
  bare=$(env -i PATH=/usr/bin:/bin "$run_py" -I -c "$path" 2> /dev/null) ||
    bare=$("$run_py" -I -c "$path")
  (cd / && "$run_py" -P - "$bare" "$root" <<'PY'
import json, os, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot, numpy, pandas, pulp  # noqa: E401,F401
try:
    import highspy  # noqa: F401
except ImportError:
    pass
bare = {os.path.realpath(p) for p in json.loads(sys.argv[1]) if p}
checkout = os.path.realpath(sys.argv[2])
for p in sys.path:
    real = os.path.realpath(p) if p else ""
    # the checkout itself (where the hmtune package is read from now) is not needed;
    # directories below it are (a virtualenv inside the checkout seen through
    # PYTHONPATH)
    if p and os.path.isdir(p) and real not in bare and real != checkout:
        print(p)
PY
  )
}

if [ -n "${PYTHON:-}" ]; then
  launcher_py=$(shquote "$run_py")
  rm -rf "$dest/lib/hmtune/venv"
  extra=$(recorded_paths) || die "PYTHON=$PYTHON: cannot list where it finds the requirements"
  if [ -n "$extra" ]; then
    printf '%s\n' "$extra" > "$pydir/hmtune-pythonpath"
    echo "hmtune install: requirements found outside $run_py's own path, recorded in" \
         "lib/hmtune/python/hmtune-pythonpath:"
    printf '%s\n' "$extra" | sed 's/^/   /'
  fi
else
  venv=$dest/lib/hmtune/venv
  run_py=$venv/bin/python
  launcher_py='"$prefix/lib/hmtune/venv/bin/python"'
  reqs=$(grep -vE '^[[:space:]]*(pytest|ruff)([[:space:]=<>~!;[]|$)' "$root/requirements.txt")
  want=$(printf '%s\n' "$reqs" | sha256sum | cut -d' ' -f1)
  if [ ! -x "$run_py" ] || [ "$(cat "$venv/.requirements.sha" 2> /dev/null)" != "$want" ]; then
    echo "hmtune install: making a virtualenv with the requirements in $venv"
    [ -x "$run_py" ] || python3 -m venv "$venv"
    printf '%s\n' "$reqs" > "$venv/requirements.txt"
    "$run_py" -m pip install -q --disable-pip-version-check -r "$venv/requirements.txt"
    echo "$want" > "$venv/.requirements.sha"
  fi
  "$run_py" -c "$need_py" || die "the virtualenv in $venv lacks the requirements"
fi

# Byte-compile now, so that running hmtune never writes into PREFIX (checked-hash: the
# .pyc files stay valid when the tree is copied without its timestamps).
strip=()
[ -z "$destdir" ] || strip=(-s "$destdir" -p /)
"$run_py" -m compileall -q --invalidation-mode checked-hash "${strip[@]}" "$pydir" > /dev/null

# The launchers find PREFIX from their own location.
cat > "$dest/bin/hmtune" <<EOF
#!/bin/sh
# hmtune CLI, installed by 'make install' (the checkout's own is bin/hmtune there).
prefix=\$(cd "\$(dirname "\$(readlink -f "\$0")")/.." && pwd)
py=$launcher_py
# -P: a directory named hmtune in the current directory (a checkout) must not shadow
# the installed package.
PYTHONPATH="\$prefix/lib/hmtune/python\${PYTHONPATH:+:\$PYTHONPATH}" exec "\$py" -P -m hmtune.workflows.cli "\$@"
EOF
chmod 755 "$dest/bin/hmtune"
install -m 755 "$root/workflows/demo.sh" "$dest/bin/hmtune-demo"

# Modulefiles: PATH only (the launcher finds everything else from its own location).
# Tcl for Environment Modules (and Lmod); Lua for Lmod, which takes it over the Tcl one
# of the same name; Environment Modules skips it (no #%Module line).
modfile=$dest/share/modulefiles/hmtune/${version:-current}
whatis="hmtune: put an application's hot heap objects in fast memory tiers"
cat > "$modfile" <<EOF
#%Module1.0
## hmtune ${version}, installed by 'make install' into $prefix
proc ModulesHelp { } {
    puts stderr "hmtune ${version}: trace, analyze, advise, run (hmtune --help)"
}
module-whatis "$whatis"
module-whatis "Version: ${version}"
prepend-path PATH {$prefix/bin}
EOF
cat > "$modfile.lua" <<EOF
-- hmtune ${version}, installed by 'make install' into $prefix
help([[hmtune ${version}: trace, analyze, advise, run (hmtune --help)]])
whatis("$whatis")
whatis("Version: ${version}")
prepend_path("PATH", [==[$prefix/bin]==])
EOF
chmod 644 "$modfile" "$modfile.lua"

echo "hmtune install: done: $prefix/bin/hmtune (Python: $run_py)"
echo "   modules (Lmod, Environment Modules): module use $prefix/share/modulefiles && module load hmtune"
