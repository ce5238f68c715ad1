#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU and its driver: builds tlm
# if needed (scripts/setup.sh), says what the driver reports, runs the tests
# that need a GPU (lit `REQUIRES: cuda` and the runtime unit test), and
# benchmarks tiny and small on the GPU beside the CPU. Ends with a summary;
# exits non-zero if a GPU test failed.
#
#   scripts/gpu-check.sh            # build/ (or $TLM_BUILD_DIR)
#   TLM_GPU_BENCH_GEN=64 scripts/gpu-check.sh
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TLM_BUILD_DIR:-$root/build}"
gen="${TLM_GPU_BENCH_GEN:-16}"
cd "$root"
summary=()
note() { summary+=("$1"); echo "gpu-check: $1"; }

if [ ! -x "$build/bin/tlm-run" ]; then
  TLM_BUILD_DIR="$build" scripts/setup.sh || { echo "gpu-check: build failed"; exit 1; }
fi
run="$build/bin/tlm-run"
lit="$(command -v lit || echo /usr/lib/llvm-22/bin/lit)"

if command -v nvidia-smi >/dev/null; then
  note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1)"
else
  note "device: nvidia-smi not found"
fi
: "${CUDA_HOME:=/usr/local/cuda}"
export CUDA_HOME
if [ -f "$CUDA_HOME/nvvm/libdevice/libdevice.10.bc" ]; then
  note "libdevice: $CUDA_HOME/nvvm/libdevice/libdevice.10.bc"
else
  note "libdevice: missing under CUDA_HOME=$CUDA_HOME (the GPU pipeline needs it)"
fi

status=0
# The lit suite reports the cuda feature through the tests it runs.
if "$lit" -v "$build/tests" --filter 'cuda|gpu' > "$build/gpu-lit.log" 2>&1; then
  note "lit (cuda, gpu tests): $(grep -E '^ *(Passed|Unsupported|Failed)' "$build/gpu-lit.log" | tr -s ' ' | tr '\n' ' ')"
else
  status=1
  note "lit (cuda, gpu tests) FAILED: see $build/gpu-lit.log"
  grep -E '^(FAIL|UNRESOLVED)' "$build/gpu-lit.log" | head -n 20
fi
if "$build/tests/unit/CudaRuntimeTest" > "$build/gpu-unit.log" 2>&1; then
  note "CudaRuntimeTest: $(grep -E 'PASSED|SKIPPED' "$build/gpu-unit.log" | tr '\n' ' ')"
else
  status=1
  note "CudaRuntimeTest FAILED: see $build/gpu-unit.log"
  tail -n 30 "$build/gpu-unit.log"
fi

# Benchmarks: prefill and decode tok/s, CPU (all cores) beside the GPU.
for case in tiny:16 tiny:48 small:128 small:512; do
  config="${case%%:*}"; prompt="${case##*:}"
  for target in cpu cuda; do
    {
      out="$("$run" bench --config "examples/$config.json" --prompt-len "$prompt" \
              --gen "$gen" --target "$target" --json 2>&1)"
      if [ $? -ne 0 ]; then
        [ "$target" = cuda ] && status=1
        note "bench $config $target prompt $prompt FAILED: $(echo "$out" | tail -n 1)"
        continue
      fi
      json="$(echo "$out" | tail -n 1)"
      field() { echo "$json" | sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }
      note "bench $config $target prompt $prompt: compile $(field compile_ms) ms, prefill $(field prefill_tok_s) tok/s, decode $(field decode_tok_s) tok/s"
    }
  done
done

echo
echo "== gpu-check summary =="
printf '%s\n' "${summary[@]}"
exit $status
