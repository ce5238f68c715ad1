#!/usr/bin/env bash
# Data-parallel training on one machine: the Shakespeare baseline
# (examples/shakespeare/baseline.json, bench/shakespeare.sh's flags) as
# 1 process x 1 thread, 1 process x 2 threads and 2 ranks x 1 thread
# (mpirun), interleaved over ROUNDS rounds; prints each one's median
# training tokens/s, its ratio to 1 x 1, and the ranks' time summing the
# gradients a step (one sum of the whole model's, waiting for the slower
# rank included); then the time of that sum alone (bench/allreduce.c). A
# benchmark: nothing here asserts.
#
#   bench/mpi.sh [WORK_DIR]      (default: a temporary folder)
#
# Environment: TLM_MPI_STEPS (300), TLM_MPI_ROUNDS (3), TLM_RUN
# (build/bin/tlm-run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tlm="${TLM_RUN:-$root/build/bin/tlm-run}"
py=/usr/bin/python3
steps=${TLM_MPI_STEPS:-300}
rounds=${TLM_MPI_ROUNDS:-3}
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
mpirun=(mpirun --oversubscribe --bind-to none
        --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)

head -c 1003854 "$root/data/shakespeare/tinyshakespeare.txt" > "$work/train.txt"
"$tlm" tokenize --tokenizer bytes --text-file "$work/train.txt" \
  -o "$work/train.bin" --tokens-dtype uint16 > /dev/null
run=(train --config "$root/examples/shakespeare/baseline.json"
     --train-data "$work/train.bin" --tokens-dtype uint16 --seq 64 --batch 12
     --steps "$steps" --lr 1e-3 --schedule cosine --warmup 100 --beta2 0.99
     --weight-decay 0.1 --seed 1 --json)
for round in $(seq "$rounds"); do
  "$tlm" "${run[@]}" --threads 1 > "$work/1x1-$round.json"
  "$tlm" "${run[@]}" --threads 2 > "$work/1x2-$round.json"
  "${mpirun[@]}" -np 2 "$tlm" "${run[@]}" --threads 1 > "$work/2x1-$round.json"
done
# One sum of the baseline's gradients alone (918,656 floats), outside
# training's steps.
mpicc -O2 "$root/bench/allreduce.c" -o "$work/allreduce"
"${mpirun[@]}" -np 2 "$work/allreduce" 918656
$py - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def runs(name):
    return [json.load(open("%s/%s-%d.json" % (work, name, r)))
            for r in range(1, rounds + 1)]
base = statistics.median(r["tok_s"] for r in runs("1x1"))
print("| processes x threads | tok/s (median of %d) | vs 1 x 1 | sum ms a step |" % rounds)
print("|---|---|---|---|")
for name, label in (("1x1", "1 x 1"), ("1x2", "1 x 2"), ("2x1", "2 ranks x 1")):
    rs = runs(name)
    tok = statistics.median(r["tok_s"] for r in rs)
    sums = [r["sum_ms_per_step"] for r in rs if "sum_ms_per_step" in r]
    print("| %s | %.0f | %.2fx | %s |" % (label, tok, tok / base,
          "%.2f" % statistics.median(sums) if sums else "-"))
PY
