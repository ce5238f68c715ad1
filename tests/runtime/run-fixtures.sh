#!/usr/bin/env bash
# The runtime-only build's test of real models (tests/runtime/CMakeLists.txt):
# tlm-exec and the C example run the artifacts of
# scripts/make-runtime-fixtures.sh and must give the full build's JIT
# answers byte for byte: every example's logits (the same safetensors
# file), its greedy generation, and the C API's tokens.
#
#   tests/runtime/run-fixtures.sh BIN_DIR FIXTURES_DIR FAKE_CUDA_DIR
set -uo pipefail
bin=$1 fixtures=$2 fake=$3
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

shopt -s nullglob
artifacts=("$fixtures"/*.so)
if ((${#artifacts[@]} == 0)); then
  echo "FAIL: no artifacts in $fixtures (make them with scripts/make-runtime-fixtures.sh)"
  exit 1
fi
for so in "${artifacts[@]}"; do
  n=$(basename "$so" .so)
  tokens=$(cat "$fixtures/$n.tokens")
  if ! "$bin/tlm-exec" forward "$so" --tokens "$tokens" --output "$tmp/$n.st"; then
    fail "$n: tlm-exec forward failed"
    continue
  fi
  cmp -s "$tmp/$n.st" "$fixtures/$n.logits.st" || fail "$n: logits differ from the JIT's"
  "$bin/tlm-exec" generate "$so" --prompt-tokens "1 2 3" --max-new-tokens 16 \
    2>/dev/null > "$tmp/$n.txt"
  cmp -s "$tmp/$n.txt" "$fixtures/$n.generate.txt" || fail "$n: generation differs from the JIT's"
  echo "ok: $n (logits and 16 generated tokens as the JIT's)"
done

"$bin/tlm-c-generate" "$fixtures/tiny.so" --seed 3 --max-new-tokens 12 1 2 3 > "$tmp/c1.txt"
cmp -s "$tmp/c1.txt" "$fixtures/c-seeded.txt" || fail "C example, seeded weights"
"$bin/tlm-c-generate" "$fixtures/tiny.so" --weights "$fixtures/tiny.weights.st" \
  --max-new-tokens 8 7 8 > "$tmp/c2.txt"
cmp -s "$tmp/c2.txt" "$fixtures/c-weights.txt" || fail "C example, weights file"
((failed)) || echo "ok: the C example's tokens, from seeded weights and from a file"

# cuda artifacts, on the stand-in driver: what reaches it (modules,
# launches, allocations) must be what reached it from the full build.
if [[ -d "$fixtures/cuda" ]]; then
  for so in "$fixtures"/cuda/*.so; do
    n=$(basename "$so" .so)
    LD_LIBRARY_PATH=$fake TLM_FAKE_CUDA_LOG="$tmp/$n.driver.log" \
      "$bin/tlm-exec" forward "$so" --tokens "$(cat "$fixtures/tiny.tokens")" \
      --output /dev/null || fail "cuda $n: tlm-exec forward failed"
    cmp -s "$tmp/$n.driver.log" "$fixtures/cuda/$n.driver.log" ||
      fail "cuda $n: the driver saw other calls than from the full build"
    echo "ok: cuda $n ($(cat "$tmp/$n.driver.log"))"
    artifacts+=("$so")
  done
fi

# Nothing here may need a compiler library.
if ldd "$bin/tlm-exec" "$bin/tlm-c-generate" "${artifacts[@]}" |
    grep -iE 'libLLVM|libMLIR|z3|icu'; then
  fail "a binary or artifact needs a compiler library"
fi
exit $failed
