#!/usr/bin/env bash
# make dist: the release tarball, hmtune-VERSION.tar.gz, and its sha256 (VERSION is
# pyproject.toml's), in DIST (default build/dist). Byte for byte reproducible: the same
# files give the same tarball, from a checkout or from the unpacked tarball itself.
#
# What goes in: every file git tracks (from a checkout; the working tree's content), or
# the files MANIFEST lists (in an unpacked tarball, which has no git), under
# hmtune-VERSION/, plus MANIFEST. Left out: the Spack recipe and the easyconfig, which
# name the tarball's checksum and so cannot be inside it (packaging/README.md).
# Reproducible: entries sorted by name, every time set to SOURCE_DATE_EPOCH (default
# 2000-01-01T00:00:00Z), owner and group 0 by number, modes 0644/0755 (only the
# executable bit kept), GNU tar format, gzip without name or time.
#
# RECORD=1 (make dist-record) also writes the checksum into the recipe's version() line
# and the easyconfig's checksums; without it, whether they name this tarball is said
# (and a mismatch is not an error).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "make dist: $*" >&2; exit 1; }

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$root/pyproject.toml" | head -1)
[ -n "$version" ] || die "no version in $root/pyproject.toml"
name=hmtune-$version
out=${DIST:-$root/build/dist}
epoch=${SOURCE_DATE_EPOCH:-946684800}
recipe=packaging/spack/package.py
easyconfig=packaging/easybuild/$name.eb
# Files that carry the tarball's checksum (a tarball cannot hold its own checksum).
excluded() { case $1 in packaging/spack/package.py | packaging/easybuild/*.eb) return 0 ;; esac; return 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hmtune-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
list=$work/files
if top=$(git -C "$root" rev-parse --show-toplevel 2> /dev/null) && [ "$top" = "$root" ]; then
  from="git ls-files"
  git -C "$root" ls-files -z | tr '\0' '\n' > "$work/all"
  if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
    echo "make dist: note: uncommitted changes: the tarball holds the working tree's files"
  fi
elif [ -f "$root/MANIFEST" ]; then
  from="MANIFEST"
  cp "$root/MANIFEST" "$work/all"
else
  die "$root is neither a git checkout nor an unpacked release (no MANIFEST)"
fi
while IFS= read -r f; do
  [ "$f" = MANIFEST ] || excluded "$f" || printf '%s\n' "$f"
done < "$work/all" | LC_ALL=C sort > "$list"
while IFS= read -r f; do
  [ -e "$root/$f" ] || [ -L "$root/$f" ] || die "$f is listed ($from) but missing"
done < "$list"

# Stage the tree, then archive it whole: directories get the same fixed attributes.
stage=$work/stage
mkdir -p "$stage/$name"
tar -C "$root" --null --no-recursion -cf - -T <(tr '\n' '\0' < "$list") | tar -C "$stage/$name" -xf -
{ cat "$list"; echo MANIFEST; } | LC_ALL=C sort > "$stage/$name/MANIFEST"
mkdir -p "$out"
tarball=$out/$name.tar.gz
LC_ALL=C tar -C "$stage" --create --format=gnu --sort=name --mtime="@$epoch" \
  --owner=0 --group=0 --numeric-owner --mode='u+rw,go-w,a+rX' "$name" | gzip -9 -n > "$tarball.tmp"
mv "$tarball.tmp" "$tarball"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
echo "$sum  $name.tar.gz" > "$tarball.sha256"
echo "make dist: $tarball ($(wc -l < "$list") files from $from, $(stat -c %s "$tarball") bytes)"
echo "make dist: sha256 $sum"

# MIRROR=DIR (make dist MIRROR=DIR): the tarball also where a Spack mirror holds it:
# Spack 1.x reads DIR/_source-cache/archive/<sha256[:2]>/<sha256>.tar.gz, older Spack
# DIR/hmtune/hmtune-VERSION.tar.gz (packaging/spack/README.md, the offline route).
if [ -n "${MIRROR:-}" ]; then
  cache=$MIRROR/_source-cache/archive/${sum:0:2}
  mkdir -p "$cache" "$MIRROR/hmtune" || die "cannot write the mirror $MIRROR"
  cp "$tarball" "$cache/$sum.tar.gz"
  cp "$tarball" "$MIRROR/hmtune/$name.tar.gz"
  echo "make dist: Spack mirror $MIRROR: _source-cache/archive/${sum:0:2}/$sum.tar.gz and hmtune/$name.tar.gz"
fi

# The recipe's version("VERSION", sha256="...") and the easyconfig's checksums.
named() {   # the sha256 FILE names for this version ("" when none)
  case $1 in
    *.py) sed -n "s/^ *version(\"$version\", *sha256=\"\([0-9a-f]*\)\".*/\1/p" "$root/$1" ;;
    *.eb) sed -n "s/^checksums = \['\([0-9a-f]*\)'\]/\1/p" "$root/$1" ;;
  esac
}
for f in "$recipe" "$easyconfig"; do
  if [ ! -f "$root/$f" ]; then
    [ "$from" = MANIFEST ] || echo "make dist: note: no $f"
    continue
  fi
  had=$(named "$f")
  if [ "$had" = "$sum" ]; then
    echo "make dist: $f names this tarball"
  elif [ "${RECORD:-}" = 1 ]; then
    case $f in
      *.py) sed -i "s/^\( *version(\"$version\", *sha256=\"\)[0-9a-f]*\(\".*\)/\1$sum\2/" "$root/$f" ;;
      *.eb) sed -i "s/^checksums = \['[0-9a-f]*'\]/checksums = ['$sum']/" "$root/$f" ;;
    esac
    [ "$(named "$f")" = "$sum" ] || die "$f: no checksum line for $version to record it in"
    echo "make dist: $f: checksum recorded"
  else
    echo "make dist: note: $f names ${had:-no checksum} for $version, not this tarball's" \
         "(make dist-record writes it in)"
  fi
done
