#!/usr/bin/env bash
# The seeds' ablations, trained for real: the baseline and the four
# ablations of examples/shakespeare at nanoGPT's CPU "baby GPT" budget on
# Shakespeare's text (data/shakespeare, nanoGPT's 90/10 split, bytes), and
# the baseline once more in PyTorch eager (bench/torch_train.py train-run:
# the same weights, batches, schedule and optimizer) as the peer.
#
#   bench/shakespeare.sh [WORK_DIR]      (default: a temporary folder)
#
# Budget (nanoGPT's config/train_shakespeare_char.py on CPU): 2000 steps x
# batch 12 x 64 tokens, lr 1e-3 cosine to 1e-4 after 100 warmup steps,
# beta2 0.99, weight decay 0.1, clip 1.0; the validation loss is the mean
# over 200 fixed batches of the last 10%. Writes the runs under WORK_DIR,
# the curves to docs/figures/shakespeare.png, and prints a markdown table
# (validation loss, wall time, tokens/s). A benchmark: nothing here asserts.
#
# Environment: TLM_BENCH_THREADS (1), TLM_SHAKESPEARE_STEPS (2000),
# TLM_RUN (build/bin/tlm-run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tlm="${TLM_RUN:-$root/build/bin/tlm-run}"
py=/usr/bin/python3
threads=${TLM_BENCH_THREADS:-1}
steps=${TLM_SHAKESPEARE_STEPS:-2000}
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
text="$root/data/shakespeare/tinyshakespeare.txt"

head -c 1003854 "$text" > "$work/train.txt"
tail -c 111540 "$text" > "$work/val.txt"
for part in train val; do
  "$tlm" tokenize --tokenizer bytes --text-file "$work/$part.txt" \
    -o "$work/$part.bin" --tokens-dtype uint16
done
"$tlm" init --config "$root/examples/shakespeare/baseline.json" --seed 1 \
  -o "$work/init-baseline.st" > /dev/null

warmup=$(( steps < 100 ? steps : 100 ))
budget=(--seq 64 --batch 12 --steps "$steps" --lr 1e-3 --min-lr 1e-4
        --schedule cosine --warmup "$warmup" --beta2 0.99 --weight-decay 0.1
        --max-norm 1.0 --eval-interval 250 --eval-batches 200 --seed 1
        --threads "$threads")
printf "| run | validation loss | wall time | tok/s |\n|---|---|---|---|\n"
for variant in baseline no-rmsnorm post-norm no-rope silu-ffn; do
  config="$root/examples/shakespeare/$variant.json"
  weights=()
  [ "$variant" = baseline ] && weights=(--weights "$work/init-baseline.st")
  rm -rf "$work/runs/$variant"
  mkdir -p "$work/runs"
  start=$(date +%s%N)
  "$tlm" train --config "$config" "${weights[@]}" --train-data "$work/train.bin" \
    --val-data "$work/val.bin" --tokens-dtype uint16 "${budget[@]}" \
    --out-dir "$work/runs/$variant" --json > "$work/$variant.json"
  wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  $py - "$work/$variant.json" "$variant" "$wall_ms" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
print("| tlm %s | %.4f | %.1f s (training %.1f s) | %.0f |" % (sys.argv[2],
      run["validation"][-1]["loss"], float(sys.argv[3]) / 1e3,
      run["ms_per_step"] * run["steps"] / 1e3, run["tok_s"]))
PY
done
$py "$root/bench/torch_train.py" train-run \
  --config "$root/examples/shakespeare/baseline.json" \
  --weights "$work/init-baseline.st" --train-data "$work/train.bin" \
  --val-data "$work/val.bin" --batch 12 --seq 64 --steps "$steps" --lr 1e-3 \
  --min-lr 1e-4 --warmup "$warmup" --beta2 0.99 --weight-decay 0.1 --max-norm 1.0 \
  --eval-batches 200 --seed 1 --threads "$threads" > "$work/torch.json"
$py - "$work/torch.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| PyTorch %s eager baseline | %.4f | %.1f s (training only) | %.0f |" % (
      r["torch"], r["val_loss"], r["seconds"], r["tok_s"]))
PY
mkdir -p "$root/docs/figures"
$py "$root/tools/plot_training.py" "$work"/runs/{baseline,no-rmsnorm,post-norm,no-rope,silu-ffn} \
  -o "$root/docs/figures/shakespeare.png"
echo "runs in $work/runs"
