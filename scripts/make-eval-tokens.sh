#!/usr/bin/env bash
# Makes data/eval/stories260K-16k.safetensors, the token file the dtype
# perplexity test evaluates (tests/tlm-run/perplexity-dtype.test): text
# sampled from stories260K itself at temperature 1, seeds 1, 2, ..., each
# sample BOS and up to 511 new tokens, concatenated and cut into 32 rows of
# 512 (16384 tokens). Text the model wrote is text it predicts well, so the
# perplexities are low and a dtype's rounding shows plainly.
#
#   scripts/make-eval-tokens.sh [TLM_RUN]   (default build/bin/tlm-run)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run=${1:-$root/build/bin/tlm-run}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$run" import-llama2c "$root/data/models/stories260K.bin" "$tmp/m" >/dev/null
: > "$tmp/stream"
seed=1
while (( $(wc -w < "$tmp/stream") < 16384 )); do
  echo 1 >> "$tmp/stream"
  "$run" generate --config "$tmp/m/config.json" --weights "$tmp/m/weights.safetensors" \
    --prompt-tokens 1 --max-new-tokens 511 --temperature 1 --seed $seed --threads 1 \
    2>/dev/null | head -1 >> "$tmp/stream"
  seed=$((seed + 1))
done
python3 - "$tmp/stream" "$root/data/eval/stories260K-16k.safetensors" <<'PY'
import json, struct, sys
ids = [int(w) for w in open(sys.argv[1]).read().split()][:16384]
header = json.dumps({"tokens": {"dtype": "I32", "shape": [32, 512],
                                "data_offsets": [0, 4 * len(ids)]}}).encode()
header += b" " * (-len(header) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack(f"<{len(ids)}i", *ids))
PY
echo "wrote data/eval/stories260K-16k.safetensors ($((seed - 1)) samples)"
