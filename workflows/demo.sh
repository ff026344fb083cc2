#!/usr/bin/env bash
# `make demo`: the bundled latency example through every stage that exists so far.
# Today: trace → finalize → check-trace. (analyze, advise and rerun join as they land.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/hmtune-out/latency}
app="$root/build/examples/latency"
echo "== hmtune demo: tracing $app (-s 256: 256 MiB of arrays)"
"$root/bin/hmtune" trace -o "$out" -- "$app" -s 256
echo "== validating the trace"
"$root/bin/hmtune" check-trace "$out/trace.prv"
echo "== allocation sites (event 32000009 labels in $out/trace.pcf)"
awk '/32000009/{t=1} t&&/^VALUES/{v=1;next} v&&NF==0{exit} v&&$1>=3{print "  site " $0}' "$out/trace.pcf"
echo "== open it in Paraver: wxparaver $out/trace.prv"
