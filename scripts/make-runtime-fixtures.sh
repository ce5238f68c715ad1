#!/usr/bin/env bash
# Makes what the runtime-only build's tests run (tests/runtime): an artifact
# of every example config, one thread each, and the JIT's answers for them,
# with the full build's tlm-run; and cuda artifacts of two (below). The runtime-only build (a machine without
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
# cuda artifacts, where this machine can make them (ptxas and libdevice),
# with what the full build's tlm-exec handed the stand-in driver
# (tests/tools/fake-cuda) for each: the runtime-only build must hand it the
# same.
fake="$(dirname "$run")/../tests/fake-cuda"
if [[ -e "$fake/libcuda.so.1" ]] &&
    "$run" compile --config "$root/examples/tiny.json" --target cuda \
      --output "$out/cuda-probe.so" >/dev/null 2>&1; then
  rm -f "$out/cuda-probe.so"
  mkdir -p "$out/cuda"
  for n in tiny tiny-tied; do
    "$run" compile --config "$root/examples/$n.json" --target cuda \
      --output "$out/cuda/$n.so" >/dev/null
    LD_LIBRARY_PATH=$fake TLM_FAKE_CUDA_LOG="$out/cuda/$n.driver.log" \
      "$(dirname "$run")/tlm-exec" forward "$out/cuda/$n.so" --tokens "$tokens" \
      --output /dev/null
  done
fi
echo "runtime fixtures: $(find "$out" -name '*.so' | wc -l) artifacts in $out ($(du -sh "$out" | cut -f1))"
