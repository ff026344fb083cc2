#!/usr/bin/env bash
# `make demo`: the bundled latency example through every stage that exists so far:
# trace (with the sampler auto picks) → check-trace → analyze (sites.csv, allocs.csv)
# → advise (placement.txt for a 96 MiB fast tier). (rerun joins when it lands.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/hmtune-out/latency}
app="$root/build/examples/latency"
echo "== hmtune demo: tracing $app (-s 256: 256 MiB of arrays)"
"$root/bin/hmtune" trace -o "$out" -- "$app" -s 256
echo "== validating the trace"
"$root/bin/hmtune" check-trace "$out/trace.prv"
echo "== per-site metrics"
"$root/bin/hmtune" analyze "$out/trace.prv" --top 8
echo "== placement for a 96 MiB fast tier per process (the arrays total 256 MiB)"
"$root/bin/hmtune" advise "$out" --mem 96M
echo "== results in $out: sites.csv, allocs.csv, placement.txt, report.txt, capacity_curve.png"
echo "   open the trace in Paraver:"
echo "   wxparaver $out/trace.prv configs/paraver/sampled_refs_per_object.cfg"
