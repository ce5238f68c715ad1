#!/usr/bin/env python3
"""Convert a PyTorch checkpoint of the CS336-style TransformerLM to safetensors.

    tools/torch_to_safetensors.py model.pt weights.safetensors

The input is a state_dict (or a dict holding one under "model" or
"state_dict", as training loops often save). Keys keep the names of
docs/spec/model.md; a `_orig_mod.` prefix left by torch.compile is stripped and
`attn.o_proj` is renamed `attn.output_proj`. Tensors are written as F32,
row-major, never transposed: PyTorch's Linear weight is already (out, in).
Tensors that are not model weights (a persistent RoPE table, say) are
dropped with a note. The output is written whole or not at all. A bad input
is one `error:` line and exit code 1. The safetensors writer is a few lines
of struct + json, so only torch itself is needed.
"""
import json
import os
import re
import struct
import sys
import tempfile

# The weight names of docs/spec/model.md.
WEIGHT = re.compile(
    r"(token_embeddings|ln_final|lm_head)\.weight"
    r"|layers\.\d+\.(ln1|ln2|attn\.(q|k|v|output)_proj|ffn\.w[123])\.weight")


def canonical(name):
    if name.startswith("_orig_mod."):
        name = name[len("_orig_mod."):]
    return name.replace(".attn.o_proj.", ".attn.output_proj.")


def state_dict_of(obj):
    for key in ("model", "state_dict", "model_state_dict"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            return obj[key]
    return obj


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = tensors[name]
        blob = data["bytes"]
        header[name] = {"dtype": "F32", "shape": data["shape"],
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    # Beside the destination, renamed over it once complete.
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                prefix=os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for blob in blobs:
                f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def error(message):
    print(f"error: {message}", file=sys.stderr)
    return 1


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) != 3:
        print("usage: " + __doc__.strip().splitlines()[2].strip(),
              file=sys.stderr)
        return 1
    source, output = argv[1], argv[2]
    if not os.path.isfile(source):
        return error(f"{source}: not a file")
    if os.path.exists(output) and os.path.samefile(source, output):
        return error(f"the output '{output}' is the input: refusing to "
                     "overwrite it")
    import torch  # imported late so --help works without torch

    try:
        loaded = torch.load(source, map_location="cpu")
    except Exception as e:  # any unreadable file: one line, no traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return error(f"{source}: cannot read the checkpoint "
                     f"({type(e).__name__}: {first})")
    state = state_dict_of(loaded)
    if not isinstance(state, dict):
        return error(f"{source}: holds a {type(state).__name__}, not a "
                     "state_dict")
    tensors = {}
    for name, value in state.items():
        if not torch.is_tensor(value):
            continue
        key = canonical(name)
        if not WEIGHT.fullmatch(key):
            print(f"note: dropped '{name}' (not a model weight)",
                  file=sys.stderr)
            continue
        if key in tensors:
            print(f"error: two checkpoint keys map to '{key}'", file=sys.stderr)
            return 1
        t = value.detach().to(torch.float32).contiguous()
        tensors[key] = {"shape": list(t.shape),
                        "bytes": t.numpy().astype("<f4").tobytes()}
    if not tensors:
        return error(f"{source}: holds no model weights")
    try:
        write_safetensors(output, tensors)
    except OSError as e:
        return error(f"{output}: cannot write ({e.strerror})")
    print(f"wrote {len(tensors)} tensors to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
