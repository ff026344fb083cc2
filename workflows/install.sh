#!/usr/bin/env bash
# `make install`: copy the built libraries, helpers, CLI, configurations and examples
# into PREFIX (staged under DESTDIR when set), in the layout hmtune/core/paths.py expects:
#
#   PREFIX/bin/hmtune, hmtune-demo          the CLI and the demo (shell launchers)
#   PREFIX/lib/libhmtrace.so, libhmalloc.so the preload libraries
#   PREFIX/libexec/hmtune/                  hmtune-finalize, hmtune-probe, hmtune-prvscan,
#                                           hmtune-rusage
#   PREFIX/libexec/hmtune/examples/         latency, stream, histogram
#   PREFIX/lib/hmtune/python/hmtune/        the Python package (core, analyze, advisor,
#                                           workflows)
#   PREFIX/lib/hmtune/venv/                 their requirements (only without PYTHON=)
#   PREFIX/share/hmtune/configs/            machines/*.toml, paraver/*.cfg
#   PREFIX/share/doc/hmtune/                README.md, formats.md
#   PREFIX/share/modulefiles/hmtune/VERSION an environment-modules/Lmod file (PATH only)
#
# PYTHON=/path/to/python: use that interpreter, which must already have the
# requirements (numpy, pandas, PuLP, matplotlib); otherwise a virtualenv is made from
# python3 under PREFIX/lib/hmtune/venv and the runtime requirements of
# requirements.txt are pip-installed into it (skipped when already there).
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
install -m 644 "$root/README.md" "$root/docs/formats.md" "$dest/share/doc/hmtune/"

# The Python package: only the .py files of hmtune/ and its subpackages.
pydir=$dest/lib/hmtune/python
rm -rf "$pydir"
install -d "$pydir"
(cd "$root" && find hmtune -name '*.py' -not -path '*/__pycache__/*') | while read -r f; do
  install -D -m 644 "$root/$f" "$pydir/$f"
done
echo "hmtune ${version:-unknown}: this tree was installed by make install" > "$pydir/hmtune-installed"

if [ -n "${PYTHON:-}" ]; then
  launcher_py=$(shquote "$run_py")
  rm -rf "$dest/lib/hmtune/venv"
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

cat > "$dest/share/modulefiles/hmtune/${version:-current}" <<EOF
#%Module1.0
## hmtune ${version}, installed by 'make install' into $prefix
module-whatis "hmtune: put an application's hot heap objects in fast memory tiers"
prepend-path PATH $prefix/bin
EOF
chmod 644 "$dest/share/modulefiles/hmtune/${version:-current}"

echo "hmtune install: done: $prefix/bin/hmtune (Python: $run_py)"
echo "   environment modules: module use $prefix/share/modulefiles && module load hmtune"
