"""Encodes each string of a JSON array with `tlm-run tokenize`, one line of
ids per string (the format of hf_tokenizer_encode.mjs), and checks that
`tlm-run detokenize` gives each string back.

    tlm_encode_lines.py TLM_RUN TOKENIZER TEXTS.json OUT_DIR [--lossy-space]
                        [tokenize flags]

--lossy-space: a text that starts with a space decodes without it. So does
`tokenizers` with a Metaspace pre-tokenizer that prepends `▁` only when the
text has none: " a" and "a" encode alike.
"""
import json
import os
import subprocess
import sys

tlm_run, tokenizer, texts, out_dir = sys.argv[1:5]
flags = sys.argv[5:]
lossy = "--lossy-space" in flags
if lossy:
    flags.remove("--lossy-space")
for i, text in enumerate(json.load(open(texts, encoding="utf-8"))):
    path = os.path.join(out_dir, f"text{i}.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    ids = subprocess.run([tlm_run, "tokenize", "--tokenizer", tokenizer,
                          "--text-file", path] + flags, check=True,
                         capture_output=True, text=True).stdout.strip()
    print(ids)
    if "--special" in flags or not ids:
        continue  # special tokens decode to nothing, by design
    back = subprocess.run([tlm_run, "detokenize", "--tokenizer", tokenizer,
                           "--ids", ids], check=True, capture_output=True).stdout
    expected = text[1:] if lossy and text.startswith(" ") else text
    if back.decode("utf-8", "surrogateescape") != expected:
        sys.exit(f"decode(encode({text!r})) = {back!r}")
