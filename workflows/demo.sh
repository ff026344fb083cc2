#!/usr/bin/env bash
# `make demo`: the bundled latency example through every stage: trace (with the sampler
# auto picks) → check-trace → analyze (sites.csv, allocs.csv) → advise (placement.txt for
# a fast tier of 40 % of the traced footprint) → re-runs on this machine, whose real fast
# tier is 2 MiB hugepages (configs/machines/vm-hugetlb.toml; THP, vm-thp.toml, when
# hugepages cannot be reserved): `hmtune compare` runs all-slow, first-come, size-window,
# each advisor strategy and all-fast (every site in the fast tier, the upper bound) in 7
# interleaved rounds, and prints the speedups of the steady-state kernel time over
# all-slow with 95 % intervals, their share of all-fast's gain and the runs' page faults,
# RSS and hugepages (REPEATS=auto: rounds until the intervals are within +-3 % or 20
# minutes) → `hmtune report`.
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

# The fast tier: 40 % of the traced footprint (the sites' peak live bytes), whole 2 MiB pages.
foot=$(awk -F, '/^#/ { next } !col { for (i = 1; i <= NF; i++) if ($i == "peak_live_bytes") col = i; next }
                { s += $col } END { printf "%d", s }' "$out/sites.csv")
page=$((2 << 20))
mem=$(awk -v f="$foot" -v x="$fraction" -v p="$page" 'BEGIN { printf "%d", int((f * x + p - 1) / p) * p }')
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }

# Hugepages when they are free or can be reserved (root; compare puts nr_hugepages back),
# else transparent huge pages.
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
free=$(meminfo HugePages_Free)
if [ -n "$(meminfo Hugepagesize)" ] && { [ "${free:-0}" -ge $((mem / page)) ] ||
     { [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; }; }; then
    machine="$configs/machines/vm-hugetlb.toml"
    echo "== fast tier: $(mib "$mem") of 2 MiB hugepages per process (40 % of the $(mib "$foot") traced; $machine)"
else
    machine="$configs/machines/vm-thp.toml"
    echo "== note: hugepages cannot be reserved here (not root, or no hugetlb pool): the fast tier is"
    echo "   transparent huge pages instead ($machine), which the kernel may or may not grant"
    echo "== fast tier: $(mib "$mem") of THP per process (40 % of the $(mib "$foot") traced)"
fi
echo "== placement ($out/placement.txt, report.txt)"
"$hmtune" advise "$out" --machine "$machine" --mem "$mem"

# Runs of another tier or size (say hugepages as root before, THP now) are not comparable.
key="$machine $mem"
[ "$(cat "$out/demo-compare" 2> /dev/null)" = "$key" ] || force=(--force)
echo "== re-runs: all-slow, first-come, size-window, each strategy and all-fast, $repeats round(s), interleaved"
"$hmtune" compare -o "$out" --machine "$machine" --mem "$mem" --repeats "$repeats" \
    --fom "$fom" --reserve-hugepages "${force[@]}" -- "$app" "${args[@]}"
echo "$key" > "$out/demo-compare"

# The verdict for the advisor's default strategy (ilp), from compare's summary.csv: its
# speedup's 95 % interval against all-slow, the best baseline's and the 1.3x target.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { n = $c["variant"]; s[n] = $c["speedup"] + 0; lo[n] = $c["speedup_lo"]; hi[n] = $c["speedup_hi"]
      v[n] = $c["verdict"]; g[n] = $c["share_of_gain"] }
    function iv(n) { return lo[n] == "" ? "no interval" : sprintf("[%.2f-%.2f]", lo[n], hi[n]) }
    END {
        b = s["size-window"] > s["first-come"] ? "size-window" : "first-come"
        if (lo["ilp"] == "") verdict = "one round each: no interval, nothing can be concluded (REPEATS=7 or more)"
        else if (v["ilp"] != "faster") verdict = "the advisor is " v["ilp"] " on this run"
        else if (lo["ilp"] + 0 > hi[b] + 0 && lo["ilp"] + 0 >= 1.3) verdict = "the advisor beats the baselines and reaches the 1.3x target"
        else if (lo["ilp"] + 0 > hi[b] + 0) verdict = "the advisor beats the baselines (intervals apart), the 1.3x target not sure"
        else verdict = "the advisor and the best baseline overlap: no winner on this run"
        share = g["ilp"] == "" ? "" : sprintf(", %.0f %% of all-fast'"'"'s gain", 100 * g["ilp"])
        printf "== advisor (ilp) %.2fx %s over all-slow%s; best baseline %s %.2fx %s: %s\n",
               s["ilp"], iv("ilp"), share, b, s[b], iv(b), verdict
    }' "$out/compare/summary.csv"

echo "== one page with everything: $out/report/report.md"
"$hmtune" report "$out" > /dev/null
echo "== results in $out: sites.csv, allocs.csv, placement.txt, report.txt, capacity_curve.png,"
echo "   compare/ (runs.csv, summary.csv, each variant's placement and logs), report/"
echo "   open the trace in Paraver:"
echo "   wxparaver $out/trace.prv $configs/paraver/sampled_refs_per_object.cfg"
echo "   every placement of the top sites: make explore K=7 (exhaustive, about 10 minutes)"
echo "   re-run any traced application the same way: $rerun_hint"
