#!/usr/bin/env bash
# tlm's training step against PyTorch eager's, side by side in one run.
#
#   bench/train.sh            (the shapes of docs/training.md#performance)
#
# For the CS336 TinyStories base shape (batch 8 x 256) and nanoGPT's baby
# GPT (batch 12 x 64), on 1 and 2 threads: `tlm-run bench --train --json`
# and bench/torch_train.py bench time the full step (forward, backward,
# clipping, AdamW), alternating, TLM_BENCH_REPEAT times each (default 3;
# the table gives medians). Prints tokens/s, the tlm/PyTorch ratio, tlm's
# GFLOP/s against the FMA peak bench/probes.c measures, its compile time
# and peak RSS against its estimate. Benchmarks only: nothing here asserts.
#
# Environment: TLM_BENCH_THREADS ("1 2"), TLM_BENCH_REPEAT (3), TLM_RUN
# (default build/bin/tlm-run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tlm="${TLM_RUN:-$root/build/bin/tlm-run}"
py=/usr/bin/python3
threads=${TLM_BENCH_THREADS:-1 2}
repeat=${TLM_BENCH_REPEAT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x "$tlm" ] || "$root/scripts/setup.sh"
clang-22 -O3 -march=native -fopenmp=libomp -L/usr/lib/llvm-22/lib \
  -Wl,-rpath,/usr/lib/llvm-22/lib "$root/bench/probes.c" -o "$work/probes"
peak=$("$work/probes" | $py -c "import json,sys; print(json.load(sys.stdin)['fma_gflops_1'])")

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { $py -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

printf "%-10s %3s %6s %4s | %10s %10s %6s | %8s %6s | %8s %9s %9s\n" \
  shape thr batch seq "tlm tok/s" "torch" ratio "GFLOP/s" "%peak" \
  "compile" "RSS MB" "bound MB"
for shape in ts-base:8:256 baby-gpt:12:64; do
  IFS=: read -r name batch seq <<< "$shape"
  config="$root/bench/configs/$name.json"
  for t in $threads; do
    : > "$work/tlm" ; : > "$work/torch"
    for _ in $(seq "$repeat"); do
      "$tlm" bench --train --config "$config" --batch "$batch" --seq "$seq" \
        --threads "$t" --init gpt2 --no-cache --json > "$work/run" 2>/dev/null
      cp "$work/run" "$work/last"
      field tok_s < "$work/run" >> "$work/tlm"
      $py "$root/bench/torch_train.py" bench --config "$config" \
        --batch "$batch" --seq "$seq" --threads "$t" | field tok_s >> "$work/torch"
    done
    a=$(median < "$work/tlm"); b=$(median < "$work/torch")
    gf=$(field gflop_s < "$work/last"); cm=$(field compile_ms < "$work/last")
    rss=$(field peak_rss_mib < "$work/last"); bound=$(field rss_bound_mib < "$work/last")
    printf "%-10s %3s %6s %4s | %10.1f %10.1f %5.2fx | %8.1f %5.1f%% | %6.0fms %9.1f %9.1f\n" \
      "$name" "$t" "$batch" "$seq" "$a" "$b" "$(echo "$a / $b" | bc -l)" \
      "$gf" "$(echo "100 * $gf / ($peak * $t)" | bc -l)" "$cm" "$rss" "$bound"
  done
done
echo "%peak: of the FMA peak of that many cores (bench/probes.c: $peak GFLOP/s a core)"
