#!/usr/bin/env bash
# Run a test command while holding this host's test lock. The tests change host-wide
# state (the hugepage pool through /proc/sys/vm/nr_hugepages, and count its free pages):
# two test runs at once on one host would break each other's counts, so a second one
# waits for the first (90 minutes at most, CI's limit). Nested calls (make test ->
# make test-c) hold it already. The command's own children do not hold the lock
# (flock -o): a process left behind by a test cannot stall the next run.
set -uo pipefail
if [ -n "${HMTUNE_TEST_LOCK_HELD:-}" ]; then
  exec "$@"
fi
dir=/run/lock
[ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
lock=${HMTUNE_TEST_LOCK:-$dir/hmtune-tests.lock}
# without flock, or without a lock file this user can open: this run cannot change the
# pool either way (not root), so it runs unlocked
command -v flock >/dev/null || exec "$@"
{ : >>"$lock"; } 2>/dev/null || [ -r "$lock" ] || exec "$@"
export HMTUNE_TEST_LOCK_HELD=1
busy=75
flock -n -E "$busy" -o "$lock" "$@"
rc=$?
[ "$rc" -eq "$busy" ] || exit "$rc"
echo "another hmtune test run holds $lock (the tests share this host's hugepage pool): waiting for it" >&2
flock -w 5400 -E "$busy" -o "$lock" "$@"
rc=$?
[ "$rc" -eq "$busy" ] && echo "gave up after 90 minutes: the other test run still holds $lock" >&2
exit "$rc"
