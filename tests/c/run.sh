#!/usr/bin/env bash
# Run every C test binary in DIR; print each result and "N passed, N failed".
dir=${1:?usage: run.sh BUILD_TEST_DIR}
pass=0; fail=0
for t in "$dir"/test_*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1); rc=$?
  p=$(grep -c '^PASS ' <<<"$out"); f=$(grep -c '^FAIL ' <<<"$out")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; out="$out
FAIL $(basename "$t") (exit status $rc)"; fi
  pass=$((pass + p)); fail=$((fail + f))
  sed "s|^|$(basename "$t"): |" <<<"$out" | grep -v ': PASS ' || true
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
