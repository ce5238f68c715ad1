"""Compares a tokenizer.json that `tlm-run train-tokenizer` wrote with the
CS336 reference (data/conformance/cs336/bpe): the merges in order, exactly,
and the vocabulary (the model's and the added tokens) as sets (of ids, and
of tokens), as CS336's test_train_bpe does. Tokens on both sides are spelled in GPT-2's byte
alphabet. Prints one line and exits 1 on the first difference."""
import json
import sys

tokenizer, merges_file, vocab_file = sys.argv[1:4]
with open(tokenizer, encoding="utf-8") as f:
    root = json.load(f)
model = root["model"]
with open(merges_file, encoding="utf-8") as f:
    want_merges = [tuple(line.rstrip("\n").split(" ")) for line in f if line.strip()]
with open(vocab_file, encoding="utf-8") as f:
    want_vocab = json.load(f)

got_merges = [tuple(m) for m in model["merges"]]
for i, (got, want) in enumerate(zip(got_merges, want_merges)):
    if got != want:
        print(f"merge {i} differs: {got} against the reference's {want}")
        sys.exit(1)
if len(got_merges) != len(want_merges):
    print(f"{len(got_merges)} merges against the reference's {len(want_merges)}")
    sys.exit(1)
# The special tokens are added tokens (not in the model's vocabulary).
got_vocab = dict(model["vocab"])
for t in root.get("added_tokens", []):
    got_vocab[t["content"]] = t["id"]
if set(got_vocab.values()) != set(want_vocab.values()):
    print("the ids differ from the reference's")
    sys.exit(1)
if set(got_vocab) != set(want_vocab):
    missing = sorted(set(want_vocab) - set(got_vocab))[:5]
    extra = sorted(set(got_vocab) - set(want_vocab))[:5]
    print(f"the tokens differ: missing {missing}, extra {extra}")
    sys.exit(1)
print(f"{len(got_merges)} merges and {len(got_vocab)} tokens as the reference")
