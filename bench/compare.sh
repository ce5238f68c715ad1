#!/usr/bin/env bash
# tlm against PyTorch eager on the same seeded weights, in one run.
#
#   bench/compare.sh [config ...]     (default: tiny cs336-ts small)
#
# For each config: tlm-run writes seeded weights, PyTorch's logits for 16
# tokens are checked against tlm's (so both run the same model), then
# `tlm-run bench --json` and bench/torch_model.py time prefill of 128 and 512
# tokens and 64 decode steps on 1 and 2 threads. Prints a table of tok/s and
# tlm/PyTorch ratios, tlm's projection GFLOP/s against the measured FMA peak
# and its decode weight traffic against the measured read bandwidth
# (bench/probes.c), then the projections alone (bench/gemm.cpp: the last
# config's weight shapes against 512 rows, GFLOP/s and % of the FMA peak
# for the median and the fastest of 20 calls),
# then the ablation table: small.json with each optimization switched off
# in turn and with decode's GEMV in 8-column blocks (1 thread, 512
# tokens), and cs336-ts and small.json on 2 threads with and without the
# thread heuristic (tlm-serialize-small-parallel); and the last config's
# weights in each dtype of TLM_BENCH_DTYPES (default "bf16 f16 q8_0 q4_0"; empty
# skips it) against f32, with decode's weight traffic per step.
# Benchmarks only: nothing here asserts.
#
# Environment: TLM_BENCH_PROMPTS (default "128 512"), TLM_BENCH_GEN (64),
# TLM_BENCH_THREADS ("1 2"), TLM_BENCH_REPEAT (3: runs of each row, tlm and
# PyTorch in turn; the table gives the medians), TLM_BENCH_GEMM (1; 0 skips the projections),
# TLM_BENCH_ABLATION (1; 0 skips it), TLM_RUN (the tlm-run to measure; default
# build/bin/tlm-run, e.g. an older build to compare against).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tlm="${TLM_RUN:-$root/build/bin/tlm-run}"
py=/usr/bin/python3
prompts=${TLM_BENCH_PROMPTS:-128 512}
gen=${TLM_BENCH_GEN:-64}
threads=${TLM_BENCH_THREADS:-1 2}
repeat=${TLM_BENCH_REPEAT:-3}
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(tiny cs336-ts small)

[ -x "$tlm" ] || "$root/scripts/setup.sh"
# Every compile is a cold one (compile ms are measured): no compile cache,
# where the tlm-run measured has one.
nocache=()
"$tlm" bench --help 2>/dev/null | grep -q -- '--no-cache' && nocache=(--no-cache)
# Debian's torch calls whatever libblas.so.3 is installed: without OpenBLAS
# that is the reference BLAS (3 GFLOP/s measured against 106 with OpenBLAS).
for pkg in python3-torch libopenblas0-pthread; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >/dev/null
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

clang-22 -O3 -march=native -ffp-contract=fast -fopenmp=libomp \
  -L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib \
  "$root/bench/probes.c" -o "$work/probes"
probes=$("$work/probes")
echo "machine: $probes"

# The PyTorch side runs as a fair baseline: the environment's OpenBLAS
# presets slow it down 1.6x, and glibc returning big buffers to the OS costs
# it 2x at 512 tokens (measured; see the performance issue). 32 MiB is the
# largest mmap threshold glibc accepts (a larger value is ignored).
# OpenBLAS also gets the thread count (it runs its own pthreads beside
# torch's OpenMP ones), and OpenMP waits passively: with spinning workers
# PyTorch on 2 threads measured 5 tok/s decode, with passive ones 31.
torch_run() { # threads, then torch_model.py's arguments
  local t=$1
  shift
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 \
    OPENBLAS_NUM_THREADS="$t" OMP_NUM_THREADS="$t" OMP_WAIT_POLICY=PASSIVE \
    "$py" "$root/bench/torch_model.py" --threads "$t" "$@"
}

results="$work/results.jsonl"
longest=$(printf '%s\n' $prompts | sort -n | tail -1)
for name in "${configs[@]}"; do
  src="$root/examples/$name.json"
  [ -f "$src" ] || src="$name"
  # Room for the longest prompt plus the decode steps; RoPE has no learned
  # positions, so the weights do not depend on context_length. Prints the
  # first 16 ids of the benchmark prompt (i * 7919 mod vocab_size).
  cfg="$work/$(basename "$src")"
  ids=$("$py" - "$src" "$cfg" $((longest + gen)) <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["context_length"] = max(c["context_length"], int(sys.argv[3]))
json.dump(c, open(sys.argv[2], "w"))
print(" ".join(str(i * 7919 % c["vocab_size"]) for i in range(16)))
PY
)
  # Embedding and head parameters: a prefill runs the head on its last
  # token only, so they are left out of its FLOP count.
  head=$("$py" -c 'import json, sys
c = json.load(open(sys.argv[1]))
print(c["vocab_size"] * c["d_model"] * (1 if c.get("tie_embeddings") else 2))' "$cfg")
  weights="$work/$(basename "$src" .json).safetensors"
  "$tlm" init --config "$cfg" --seed 0 --output "$weights" >/dev/null
  "$tlm" forward --config "$cfg" --weights "$weights" --tokens "$ids" \
    --output "$work/logits.st" >/dev/null
  check=$(torch_run 1 --config "$cfg" --weights "$weights" --prompt-len 16 \
          --gen 0 --check-logits "$work/logits.st")
  echo "$name: PyTorch vs tlm logits on 16 tokens: $check"
  for t in $threads; do
    for p in $prompts; do
      # tlm and PyTorch in turn, `repeat` times: the table gives medians.
      for _ in $(seq "$repeat"); do
        a=$("$tlm" bench "${nocache[@]}" --config "$cfg" --weights "$weights" \
              --prompt-len "$p" --gen "$gen" --threads "$t" --json --quiet)
        b=$(torch_run "$t" --config "$cfg" --weights "$weights" \
              --prompt-len "$p" --gen "$gen")
        echo "{\"config\": \"$name\", \"prompt\": $p, \"threads\": $t," \
             "\"head_params\": $head," \
             "\"tlm\": $a, \"torch\": $b}" >>"$results"
      done
      echo "  $name threads=$t prompt=$p done" >&2
    done
  done
done

# The projections alone (bench/gemm.cpp): each distinct weight shape of the
# last config (small.json by default) against 512 rows, fused as the
# pipeline fuses them (Q/K/V as one, W1/W3 as one).
gemms="$work/gemms.jsonl"
touch "$gemms"
if [ "${TLM_BENCH_GEMM:-1}" != 0 ]; then
  last="$work/$(basename "${configs[-1]}")"
  [ -f "$last" ] || last="$work/${configs[-1]}.json"
  shapes=$("$py" - "$last" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
d, h = c["d_model"], c["num_heads"]
kv = c.get("num_kv_heads", h)
ff = c["d_ff"]
swiglu = c.get("use_swiglu", True)
shapes = [(d, d + 2 * kv * (d // h)), (d, d), (d, 2 * ff if swiglu else ff),
          (ff, d)]
print(" ".join(dict.fromkeys(f"{k}x{n}" for k, n in shapes)))
PY
)
  for t in $threads; do
    "$root/build/bin/tlm-gemm-bench" --threads "$t" --m 512 $shapes >>"$gemms"
    echo "  gemms threads=$t done" >&2
  done
fi

# Weight dtypes: the last config's seeded weights as f32 and in each of
# TLM_BENCH_DTYPES, every dtype in turn `repeat` times per thread count
# (prefill of the longest prompt, the decode steps).
dtypes="$work/dtypes.jsonl"
touch "$dtypes"
if [ -n "${TLM_BENCH_DTYPES-bf16 f16 q8_0 q4_0}" ]; then
  name=$(basename "${configs[-1]}" .json)
  cfg="$work/$name.json"
  f32="$work/$name.safetensors"
  for d in ${TLM_BENCH_DTYPES-bf16 f16 q8_0 q4_0}; do
    "$tlm" quantize --config "$cfg" --weights "$f32" --dtype "$d" \
      --output "$work/$name-$d.safetensors" >/dev/null
  done
  for t in $threads; do
    for _ in $(seq "$repeat"); do
      for d in f32 ${TLM_BENCH_DTYPES-bf16 f16 q8_0 q4_0}; do
        w=$f32; [ "$d" = f32 ] || w="$work/$name-$d.safetensors"
        a=$("$tlm" bench "${nocache[@]}" --config "$cfg" --weights "$w" \
              --prompt-len "$longest" --gen "$gen" --threads "$t" --json --quiet)
        echo "{\"config\": \"$name\", \"threads\": $t, \"dtype\": \"$d\", \"tlm\": $a}" >>"$dtypes"
      done
    done
    echo "  dtypes threads=$t done" >&2
  done
fi

ablation="$work/ablation.jsonl"
if [ "${TLM_BENCH_ABLATION:-1}" != 0 ]; then
  cfg="$work/small.json"
  weights="$work/small.safetensors"
  if [ -f "$cfg" ]; then
    # gemv-columns-8: decode's GEMV in 8-column blocks (8 streams through W)
    # instead of the one sequential stream small.json gets by default.
    for off in none tile-matmuls approximate-math fuse-attention \
      vectorize-elementwise pack-projections fuse-projections fold-rmsnorm \
      fuse-residual-adds fuse-swiglu gemv-columns-8; do
      case "$off" in
        none) flag=() ;;
        gemv-columns-8) flag=(--gemv-columns 8) ;;
        *) flag=(--disable "$off") ;;
      esac
      a=$("$tlm" bench "${nocache[@]}" --config "$cfg" --weights "$weights" --prompt-len 512 \
            --gen "$gen" --threads 1 "${flag[@]}" --json --quiet)
      echo "{\"config\": \"small\", \"threads\": 1, \"prompt\": 512, \"off\": \"$off\", \"tlm\": $a}" >>"$ablation"
      echo "  ablation $off done" >&2
    done
  fi
  # The thread heuristic (tlm-serialize-small-parallel) only acts on 2+
  # threads, most on the small models.
  for name in cs336-ts small; do
    [ -f "$work/$name.json" ] || continue
    for off in none serialize-small-parallel; do
      flag=(); [ "$off" = none ] || flag=(--disable "$off")
      a=$("$tlm" bench "${nocache[@]}" --config "$work/$name.json" \
            --weights "$work/$name.safetensors" --prompt-len "$longest" \
            --gen "$gen" --threads 2 "${flag[@]}" --json --quiet)
      echo "{\"config\": \"$name\", \"threads\": 2, \"prompt\": $longest, \"off\": \"$off\", \"tlm\": $a}" >>"$ablation"
      echo "  ablation $name threads=2 $off done" >&2
    done
  done
fi

"$py" - "$results" "$ablation" "$probes" "$gemms" "$dtypes" "$longest" <<'PY'
import json, os, sys
import statistics
# Each (config, threads, prompt) ran TLM_BENCH_REPEAT times: one row of
# per-field medians (speeds vary run to run on a shared host).
runs = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    runs.setdefault((r["config"], r["threads"], r["prompt"]), []).append(r)
rows = []
for group in runs.values():
    r = dict(group[0])
    for side in ("tlm", "torch"):
        r[side] = dict(r[side])
        for key in ("prefill_tok_s", "decode_tok_s"):
            r[side][key] = statistics.median(g[side][key] for g in group)
    r["runs"] = len(group)
    rows.append(r)
probe = json.loads(sys.argv[3])
gemms = [json.loads(l) for l in open(sys.argv[4])]
print()
print("| config | thr | prompt | tlm prefill tok/s | torch prefill tok/s | ratio | "
      "tlm decode tok/s | torch decode tok/s | ratio | tlm GFLOP/s (% FMA peak) | "
      "decode GB/s (% bandwidth) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    t, p = r["tlm"], r["torch"]
    peak = probe["fma_gflops_1"] if r["threads"] == 1 else probe["fma_gflops_all"]
    bw = probe["read_gbs_1"] if r["threads"] == 1 else probe["read_gbs_all"]
    # Projection work per prompt token (a lower bound: attention left out);
    # the head runs on the last token only.
    fpt = 2 * (t["params"] - r["head_params"])
    gflops = fpt * t["prefill_tok_s"] / 1e9
    gbs = t["weights_mib"] * 1048576 * t["decode_tok_s"] / 1e9
    print(f"| {r['config']} | {r['threads']} | {r['prompt']} | "
          f"{t['prefill_tok_s']:.0f} | {p['prefill_tok_s']:.0f} | "
          f"{t['prefill_tok_s'] / p['prefill_tok_s']:.2f} | "
          f"{t['decode_tok_s']:.1f} | {p['decode_tok_s']:.1f} | "
          f"{t['decode_tok_s'] / p['decode_tok_s']:.2f} | "
          f"{gflops:.0f} ({100 * gflops / peak:.0f}%) | "
          f"{gbs:.1f} ({100 * gbs / bw:.0f}%) |")
if gemms:
    print()
    print("| projection (x: M x K, W: N x K) | thr | median ms | GFLOP/s | % FMA peak | best ms | GFLOP/s | % FMA peak |")
    print("|---|---|---|---|---|---|---|---|")
    for g in gemms:
        peak = probe["fma_gflops_1"] if g["threads"] == 1 else probe["fma_gflops_all"]
        print(f"| {g['m']} x {g['k']} x {g['n']} | {g['threads']} | {g['ms']:.2f} | "
              f"{g['gflops']:.0f} | {100 * g['gflops'] / peak:.0f}% | "
              f"{g['best_ms']:.2f} | {g['best_gflops']:.0f} | "
              f"{100 * g['best_gflops'] / peak:.0f}% |")
dtype_runs = {}
for l in open(sys.argv[5]):
    d = json.loads(l)
    dtype_runs.setdefault((d["config"], d["threads"], d["dtype"]), []).append(d["tlm"])
if dtype_runs:
    print()
    print(f"| dtype | config | thr | prefill {sys.argv[6]} tok/s | vs f32 | "
          "decode tok/s | vs f32 | compile ms | MB read per step | "
          "decode GB/s (% bandwidth) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    med = lambda runs, key: statistics.median(r[key] for r in runs)
    for (config, thr, dtype), runs in dtype_runs.items():
        base = dtype_runs[(config, thr, "f32")]
        bw = probe["read_gbs_1"] if thr == 1 else probe["read_gbs_all"]
        pre, dec = med(runs, "prefill_tok_s"), med(runs, "decode_tok_s")
        gbs = med(runs, "decode_gb_s")
        print(f"| {dtype} | {config} | {thr} | {pre:.0f} | "
              f"{pre / med(base, 'prefill_tok_s'):.2f} | {dec:.1f} | "
              f"{dec / med(base, 'decode_tok_s'):.2f} | {med(runs, 'compile_ms'):.0f} | "
              f"{runs[0]['weight_bytes_per_token'] / 1e6:.1f} | "
              f"{gbs:.1f} ({100 * gbs / bw:.0f}%) |")
if os.path.exists(sys.argv[2]) and os.path.getsize(sys.argv[2]):
    print()
    print("| ablation | config | thr | prompt | compile ms | prefill tok/s | decode tok/s |")
    print("|---|---|---|---|---|---|---|")
    for l in open(sys.argv[2]):
        a = json.loads(l)
        t = a["tlm"]
        label = ("all on" if a["off"] == "none" else "--gemv-columns 8"
                 if a["off"] == "gemv-columns-8" else f"--disable {a['off']}")
        print(f"| {label} | {a['config']} | {a['threads']} | {a['prompt']} | {t['compile_ms']:.0f} | "
              f"{t['prefill_tok_s']:.1f} | {t['decode_tok_s']:.1f} |")
print()
print(f"tok/s: medians of {rows[0]['runs'] if rows else 0} runs of each row, "
      "tlm and PyTorch in turn. "
      "GFLOP/s = 2 x parameters outside the embedding and head x prefill "
      "tok/s (attention and the head's one row excluded: a lower bound); "
      "decode GB/s = weight bytes x decode tok/s. Every step computes the "
      "logits of its last token only, on both sides.")
PY
