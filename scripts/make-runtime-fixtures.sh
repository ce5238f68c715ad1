#!/usr/bin/env bash
# Makes what the runtime-only build's tests run (tests/runtime): an artifact
# of every example config, one thread each, and the JIT's answers for them,
# with the full build's tlm-run. The runtime-only build (a machine without
# LLVM, or CI's second build) then checks tlm-exec and the C API against
# these, byte for byte.
#
#   scripts/make-runtime-fixtures.sh [TLM_RUN] [OUTDIR]
#     TLM_RUN  default build/bin/tlm-run
#     OUTDIR   default build/runtime-fixtures
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run=${1:-$root/build/bin/tlm-run}
out=${2:-$root/build/runtime-fixtures}
tokens="5 17 9 3 11 8 8 1 6"
rm -rf "$out" && mkdir -p "$out"
for config in "$root"/examples/*.json; do
  n=$(basename "$config" .json)
  jit=(--config "$config" --threads 1 --no-cache)
  "$run" compile --config "$config" --threads 1 --output "$out/$n.so" >/dev/null
  echo "$tokens" > "$out/$n.tokens"
  "$run" forward "${jit[@]}" --tokens "$tokens" --output "$out/$n.logits.st"
  "$run" generate "${jit[@]}" --prompt-tokens "1 2 3" --max-new-tokens 16 \
    2>/dev/null > "$out/$n.generate.txt"
done
# The C example's: seeded weights, and a weights file.
"$run" generate --config "$root/examples/tiny.json" --threads 1 --no-cache \
  --seed 3 --prompt-tokens "1 2 3" --max-new-tokens 12 2>/dev/null |
  head -1 > "$out/c-seeded.txt"
"$run" init --config "$root/examples/tiny.json" --seed 5 --output "$out/tiny.weights.st" >/dev/null
"$run" generate --config "$root/examples/tiny.json" --threads 1 --no-cache \
  --weights "$out/tiny.weights.st" --prompt-tokens "7 8" --max-new-tokens 8 \
  2>/dev/null | head -1 > "$out/c-weights.txt"
echo "runtime fixtures: $(ls "$out"/*.so | wc -l) artifacts in $out ($(du -sh "$out" | cut -f1))"
