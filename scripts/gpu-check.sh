#!/usr/bin/env bash
# The GPU device check, for a machine with one NVIDIA GPU, its driver,
# CMake, Ninja and a C++ compiler but no LLVM, MLIR or network: builds the
# runtime alone (-DTLM_RUNTIME_ONLY=ON), then runs scripts/gpu_check.py on
# what scripts/gpu-prepare.sh made beforehand on a build machine (cuda
# artifacts and the CPU's answers): the GPU's logits against the CPU's,
# stories260K's 200 greedy tokens against the CPU's, decode and prefill
# speed. Writes OUT_DIR/gpu-check.json; exits 1 if a comparison failed.
#
#   scripts/gpu-check.sh [PREPARED_DIR] [OUT_DIR]
#     PREPARED_DIR  default gpu-check (gpu-prepare.sh's)
#     OUT_DIR       default PREPARED_DIR ($OUT on the device machine)
#   TLM_GPU_CHECK_BIN=DIR   use DIR/tlm-exec instead of building
#   TLM_GPU_CHECK_PROFILE="small"   models whose kernels are timed one by
#                                   one (TLM_CUDA_PROFILE) in an extra run
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prepared=$(cd "${1:-$root/gpu-check}" && pwd)
out=${2:-$prepared}
mkdir -p "$out"
start=$(date +%s)
if [[ -n ${TLM_GPU_CHECK_BIN:-} ]]; then
  bin=$TLM_GPU_CHECK_BIN
else
  build="$root/build-gpu"
  cmake -G Ninja -S "$root" -B "$build" -DTLM_RUNTIME_ONLY=ON \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON > "$out/gpu-build.log" 2>&1
  cmake --build "$build" --target tlm-exec >> "$out/gpu-build.log" 2>&1 ||
    { tail -n 30 "$out/gpu-build.log"; exit 1; }
  bin="$build/bin"
fi
echo "gpu-check: runtime ready after $(( $(date +%s) - start )) s"
python3 "$root/scripts/gpu_check.py" "$bin/tlm-exec" "$prepared" \
  "$out/gpu-check.json" > "$out/gpu-check.txt" && status=0 || status=$?
echo "gpu-check: done after $(( $(date +%s) - start )) s, $( ((status)) && echo FAILED || echo passed)"
[[ -f $out/gpu-check.json ]] || exit 1
python3 - "$out/gpu-check.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("device:", r["device"])
for name, m in r["models"].items():
    f, g, b = m.get("forward", {}), m.get("greedy"), m.get("bench", {})
    line = f"{name}: logits " + (f"{f['outside']} of {f['elements']} outside, "
                                 f"max abs error {f['max_abs_error']:.2e}"
                                 if "outside" in f else f"ERROR {f.get('error')}")
    for key, what in (("forward_incremental", "decode steps"),
                      ("forward_incremental_graphs", "as graphs")):
        if "-tf32" in name or "-bf16mma" in name:  # prefill only
            break
        if key == "forward_incremental_graphs" and "-no-" in name:
            break
        fi = m.get(key, {})
        line += (f"; {what} {fi['outside']} outside" if "outside" in fi
                 else f"; {what} ERROR {fi.get('error')}")
    if g:
        line += f"; greedy {g['same_prefix']}/{g['tokens']} as the CPU's"
    if gg := m.get("greedy_graphs"):
        line += f" ({gg['same_prefix']}/{gg['tokens']} with CUDA graphs)"
    if "prefill_cores_fraction" in b:
        line += (f"; prefill {b['prefill_tok_s']:.1f} tok/s "
                 f"({100 * b['prefill_cores_fraction']:.2f}% of "
                 f"{b['tensor_cores'].upper()})")
    elif "decode_tok_s" in b:
        line += (f"; decode {b['decode_tok_s']:.1f} tok/s "
                 f"({100 * b['decode_hbm_fraction']:.2f}% of HBM), prefill "
                 f"{b['prefill_tok_s']:.1f} tok/s "
                 f"({100 * b['prefill_fp32_fraction']:.2f}% of FP32)")
    elif "error" in b:
        line += f"; bench ERROR {b['error']}"
    if "vs_kernels" in m.get("bench_graphs", {}):
        line += f"; decode as CUDA graphs {m['bench_graphs']['vs_kernels']:.2f}x"
    print(line)
for name, m in r["models"].items():
    prof = m.get("profile")
    if isinstance(prof, list) and prof:
        print(f"{name}'s costliest kernels (TLM_CUDA_PROFILE, one bench run):")
        for k in prof[:5]:
            print(f"  {k['total_ms']:9.3f} ms  {k['calls']:6d} calls  "
                  f"{k['kernel']}  {k['launch']}")
if "small_bf16_decode_vs_f32" in r:
    print(f"small decode, bf16 weights against f32: "
          f"{r['small_bf16_decode_vs_f32']:.2f}x")
for base, cores in (("small", "tf32"), ("small_bf16", "tf32"),
                    ("small_bf16", "bf16mma")):
    if (key := f"{base}_{cores}_prefill_vs_fma") in r:
        print(f"{base} prefill, {cores} tensor cores against FMA tiles: "
              f"{r[key]:.2f}x")
PY
exit $status
