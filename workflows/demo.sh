#!/usr/bin/env bash
# `make demo`: the bundled latency example through every stage: trace (with the sampler
# auto picks) → check-trace → analyze (sites.csv, allocs.csv) → advise (placement.txt for
# a fast tier of 40 % of the traced footprint) → re-runs on this machine, whose real fast
# tier is 2 MiB hugepages (THP when hugepages cannot be had; hmtune advise and compare
# choose it as hmtune machine shows): `hmtune compare` runs all-slow, first-come,
# size-window, each advisor strategy and all-fast (every site in the fast tier, the upper
# bound) in 7 interleaved rounds, and prints the speedups of the steady-state kernel time
# over all-slow with 95 % intervals, their share of all-fast's gain, the best strategy
# over the best baseline, and the runs' page faults, RSS and hugepages (REPEATS=auto:
# rounds until the intervals are within +-3 % or 20 minutes) → `hmtune report`.
# Every decision (the tier, its size, the verdicts) is hmtune's; this script only chains
# the commands.
# Steps already done are skipped (the trace, the finished runs); FORCE=1 redoes them.
# Installed (`make install`) as PREFIX/bin/hmtune-demo, it uses the installed pieces and
# writes to hmtune-out/latency under the current directory.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
if [ -f "$here/../lib/hmtune/python/hmtune-installed" ]; then
    prefix=$(cd "$here/.." && pwd)
    hmtune="$prefix/bin/hmtune"
    app="$prefix/libexec/hmtune/examples/latency"
    configs="$prefix/share/hmtune/configs"
    out=${OUT:-$PWD/hmtune-out/latency}
    rerun_hint="hmtune run -o DIR -- ./app args"
else
    root=$(cd "$here/.." && pwd)
    hmtune="$root/bin/hmtune"
    app="$root/build/examples/latency"
    configs="$root/configs"
    out=${OUT:-$root/hmtune-out/latency}
    rerun_hint="make rerun APP=\"./app args\""
fi
args=(${DEMO_ARGS:--s 512 -n 2})
repeats=${REPEATS:-7}
fraction=0.4
force=()
[ -z "${FORCE:-}" ] || force=(--force)
fom='kernel_time_s=([0-9.]+)'

if [ -f "$out/trace.prv" ] && [ -f "$out/sites.csv" ] && [ -z "${FORCE:-}" ] &&
   [ "$(cat "$out/demo-command" 2> /dev/null)" = "$app ${args[*]}" ]; then
    echo "== hmtune demo: $out already holds the trace of $app ${args[*]} (FORCE=1 traces again)"
else
    echo "== hmtune demo: tracing $app ${args[*]}"
    rm -f "$out/demo-command"
    "$hmtune" trace -o "$out" -- "$app" "${args[@]}"
    echo "== validating the trace"
    "$hmtune" check-trace "$out/trace.prv"
    echo "== per-site metrics"
    "$hmtune" analyze "$out/trace.prv" --top 8
    echo "$app ${args[*]}" > "$out/demo-command"
    force=(--force)                         # runs of an earlier trace are not comparable
fi

# The fast tier: 40 % of the traced footprint (the sites' peak live bytes) in whole 2 MiB
# pages, of this host's fast memory as hmtune machine finds it: here hugepages when the
# pool has free pages or root can reserve them (compare reserves them for the length
# of the runs and puts nr_hugepages back), else transparent huge pages.
echo "== placement ($out/placement.txt, report.txt)"
"$hmtune" advise "$out" --fraction "$fraction"

echo "== re-runs: all-slow, first-come, size-window, each strategy and all-fast, $repeats round(s), interleaved"
"$hmtune" compare -o "$out" --fraction "$fraction" --repeats "$repeats" \
    --fom "$fom" --reserve-hugepages "${force[@]}" -- "$app" "${args[@]}"

echo "== one page with everything: $out/report/report.md"
"$hmtune" report "$out" > /dev/null
echo "== results in $out: sites.csv, allocs.csv, placement.txt, report.txt, capacity_curve.png,"
echo "   compare/ (runs.csv, summary.csv, each variant's placement and logs), report/"
echo "   open the trace in Paraver:"
echo "   wxparaver $out/trace.prv $configs/paraver/sampled_refs_per_object.cfg"
echo "   every placement of the top sites: make explore K=7 (exhaustive, about 10 minutes)"
echo "   re-run any traced application the same way: $rerun_hint"
