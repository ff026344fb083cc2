#!/usr/bin/env bash
# `make demo`: the bundled latency example through every stage: trace (with the sampler
# auto picks) → check-trace → analyze (sites.csv, allocs.csv) → advise (placement.txt
# for a 96 MiB fast tier) → the re-run on this machine, whose real fast tier is 2 MiB
# hugepages (configs/machines/vm-hugetlb.toml): kernel time without and with
# `hmtune run`, 3 interleaved runs each, medians (MACHINE-NOTES.md: hugepages mostly
# speed up the latency-bound arrays; noise here is about ±5 %).
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
args=(-s 256)
runs=3
echo "== hmtune demo: tracing $app ${args[*]} (256 MiB of arrays)"
"$hmtune" trace -o "$out" -- "$app" "${args[@]}"
echo "== validating the trace"
"$hmtune" check-trace "$out/trace.prv"
echo "== per-site metrics"
"$hmtune" analyze "$out/trace.prv" --top 8
echo "== placement for a 96 MiB fast tier per process (the arrays total 256 MiB)"
"$hmtune" advise "$out" --mem 96M

# ---- the re-run on this machine: 96 MiB of the VM's hugepage tier ----
huge="$out/vm-hugetlb"
echo "== the same 96 MiB on this machine's fast tier: 2 MiB hugepages (configs/machines/vm-hugetlb.toml)"
"$hmtune" advise "$out" --machine "$configs/machines/vm-hugetlb.toml" --mem 96M \
    -o "$huge/placement.txt"

# Hugepages the tier may take, and reserving them when root and the pool is short
# (the old nr_hugepages comes back when the demo ends, however it ends).
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
cap=$(awk '$1 == "tier" && $3 == "hugetlb" { print $4; exit }' "$huge/placement.txt")
page_kb=$(meminfo Hugepagesize)
tier_note=""
if [ -z "$page_kb" ]; then
    tier_note="this kernel has no hugepages"
elif [ -n "$cap" ]; then
    need=$(( (cap + page_kb * 1024 - 1) / (page_kb * 1024) ))
    free=$(meminfo HugePages_Free)
    if [ "$free" -lt "$need" ] && [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
        old=$(cat /proc/sys/vm/nr_hugepages)
        trap 'echo "$old" > /proc/sys/vm/nr_hugepages' EXIT
        echo $(( old + need - free )) > /proc/sys/vm/nr_hugepages || true
        echo "== reserved hugepages: nr_hugepages $old -> $(cat /proc/sys/vm/nr_hugepages) (put back at the end)"
        free=$(meminfo HugePages_Free)
    fi
    if [ "$free" -lt "$need" ]; then
        [ "$free" -eq 0 ] && avail="unavailable" || avail="only partly available"
        tier_note="the hugepage tier was $avail: $free of the $need hugepages it needs are free (as root: echo $(( $(cat /proc/sys/vm/nr_hugepages) + need - free )) > /proc/sys/vm/nr_hugepages)"
    fi
fi
[ -z "$tier_note" ] || echo "== note: $tier_note; running anyway: what does not fit stays in ordinary memory"

kernel_time() { sed -n 's/.*kernel_time_s=\([0-9.]*\).*/\1/p' "$1"; }
checksum() { sed -n 's/.*checksum=\([0-9]*\).*/\1/p' "$1"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "== latency ${args[*]}: $runs runs without and $runs with 'hmtune run', interleaved"
plain=() placed=()
for i in $(seq "$runs"); do
    "$app" "${args[@]}" > "$huge/plain.out"
    "$hmtune" run --placement "$huge/placement.txt" -o "$huge" -- "$app" "${args[@]}" \
        > "$huge/rerun.out" 2> "$huge/rerun.err"
    if [ "$(checksum "$huge/plain.out")" != "$(checksum "$huge/rerun.out")" ]; then
        echo "demo: the checksums differ with and without the placement" >&2
        exit 1
    fi
    plain+=("$(kernel_time "$huge/plain.out")")
    placed+=("$(kernel_time "$huge/rerun.out")")
    echo "   run $i: kernel_time_s without ${plain[-1]}, with ${placed[-1]}"
done
a=$(median "${plain[@]}")
b=$(median "${placed[@]}")
awk -v a="$a" -v b="$b" 'BEGIN { printf "   median kernel_time_s: without %s, with %s: ratio %.2f (without / with)\n", a, b, a / b }'
[ -z "$tier_note" ] || echo "   ($tier_note)"
echo "== what the interposer did (last run; statistics in $huge/run-stats.json):"
cat "$huge/rerun.err"
echo "== results in $out: sites.csv, allocs.csv, placement.txt, report.txt, capacity_curve.png;"
echo "   the hugepage placement and its report in $huge/"
echo "   open the trace in Paraver:"
echo "   wxparaver $out/trace.prv $configs/paraver/sampled_refs_per_object.cfg"
echo "   re-run any traced application the same way: $rerun_hint"
