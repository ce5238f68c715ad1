#!/usr/bin/env bash
# Prepares the GPU device check (scripts/gpu-check.sh) on a machine with the
# full build: cuda artifacts of tiny, cs336-ts, small (seeded weights, so no
# weight files travel) and stories260K (its 1 MB of weights travel), tiny
# and small again with bf16 weights (NAME:DTYPE, seeded weights rounded to
# it), tiny and small (f32 and bf16) with prefill on TF32 tensor cores
# (NAME+tf32: --tensor-cores tf32), tiny and small's bf16 weights on BF16
# tensor cores (NAME+bf16: --tensor-cores bf16), tiny with each GPU kernel
# form off in
# turn (NAME/SWITCH), and the CPU's answers for each: the
# logits of a fixed prompt, and stories260K's first 200 greedy tokens. The
# GPU machine then needs no LLVM or MLIR: it builds the runtime alone and
# compares. nlohmann_json's headers travel too (OUT_DIR/third_party/, where
# the runtime-only build looks when the machine has none).
#
#   scripts/gpu-prepare.sh [BUILD_DIR] [OUT_DIR]
#     BUILD_DIR  default build (its bin/tlm-run)
#     OUT_DIR    default gpu-check (ignored by git; `carry` it to the GPU)
#   TLM_GPU_CHECK_MODELS="tiny cs336-ts"   a subset (default: eleven models and
#                                          tiny's ablations)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/gpu-check}
run="$build/bin/tlm-run"
# tiny once more with each kernel form of the GPU pipeline switched off
# (NAME/SWITCH: --disable SWITCH, tlm-run switches --target cuda): when a
# comparison fails, the one of these that passes names the kernel at fault.
ablations=$("$run" switches --target cuda | cut -f1 | sed 's|^|tiny/|')
models=${TLM_GPU_CHECK_MODELS:-"tiny cs336-ts small stories260K tiny:bf16 small:bf16 tiny+tf32 small+tf32 small:bf16+tf32 tiny+bf16 small:bf16+bf16 $(echo $ablations)"}
rm -rf "$out" && mkdir -p "$out"
# The runtime reads JSON with nlohmann_json, header-only (json.hpp includes
# the rest of the folder).
mkdir -p "$out/third_party"
cp -r /usr/include/nlohmann "$out/third_party/"

# The prompt every model's logits are compared on (cs336-ts has 16
# positions), and stories260K's greedy run.
tokens="1 5 9 13 2 7 3 11 4 8 6 12"
greedy=200
manifest="$out/manifest.txt"
: > "$manifest"
for spec in $models; do
  # NAME[:DTYPE][+tf32|+bf16][/SWITCH]: the seeded weights rounded to
  # DTYPE, prefill's projections on TF32 or BF16 tensor cores, SWITCH off;
  # NAME-DTYPE-tf32-no-SWITCH (NAME-DTYPE-bf16mma for BF16 cores).
  tc=(--tensor-cores off)
  disable=()
  suffix=
  if [[ $spec == */* ]]; then
    disable=(--disable "${spec#*/}")
    suffix=-no-${spec#*/}
    spec=${spec%%/*}
  fi
  if [[ $spec == *+tf32 ]]; then
    spec=${spec%+tf32}
    tc=(--tensor-cores tf32)
    suffix=-tf32$suffix
  elif [[ $spec == *+bf16 ]]; then
    spec=${spec%+bf16}
    tc=(--tensor-cores bf16)
    suffix=-bf16mma$suffix
  fi
  n=${spec%%:*}
  dtype=()
  if [[ $spec == *:* ]]; then
    dtype=(--weights-dtype "${spec#*:}")
  fi
  if [[ $n == stories260K ]]; then
    "$run" import-llama2c "$root/data/models/stories260K.bin" "$out/$n" > /dev/null
    config="$out/$n/config.json"
    weights=(--weights "$out/$n/weights.safetensors")
    rel_weights="$n/weights.safetensors"
  else
    config="$root/examples/$n.json"
    weights=()
    rel_weights=-
  fi
  if [[ $spec == *:* ]]; then
    n="$n-${spec#*:}"
  fi
  n=$n$suffix
  "$run" compile --config "$config" "${dtype[@]}" --target cuda "${tc[@]}" \
    "${disable[@]}" --output "$out/$n.so" > /dev/null
  "$run" forward --config "$config" "${weights[@]}" "${dtype[@]}" \
    --tokens "$tokens" --output "$out/$n.cpu.st"
  if [[ $n == stories260K ]]; then
    "$run" generate --config "$config" "${weights[@]}" --prompt-tokens 1 \
      --max-new-tokens "$greedy" --quiet > "$out/$n.cpu-greedy.txt"
  fi
  # name, artifact, weights (- for seeded), prompt
  echo "$n $n.so $rel_weights $tokens" >> "$manifest"
done
echo "gpu-prepare: $(wc -l < "$manifest") models in $out ($(du -sh "$out" | cut -f1))"
