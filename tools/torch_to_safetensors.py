#!/usr/bin/env python3
"""Convert a PyTorch checkpoint of the CS336-style TransformerLM to safetensors.

    tools/torch_to_safetensors.py model.pt weights.safetensors

The input is a state_dict (or a dict holding one under "model" or
"state_dict", as training loops often save). Keys keep the names of
docs/spec/model.md; a `_orig_mod.` prefix left by torch.compile is stripped and
`attn.o_proj` is renamed `attn.output_proj`. Tensors are written as F32,
row-major, never transposed: PyTorch's Linear weight is already (out, in).
The safetensors writer is a few lines of struct + json, so only torch itself
is needed.
"""
import json
import struct
import sys


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
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 1
    import torch  # imported late so --help works without torch

    state = state_dict_of(torch.load(argv[1], map_location="cpu"))
    tensors = {}
    for name, value in state.items():
        if not torch.is_tensor(value):
            continue
        key = canonical(name)
        if key in tensors:
            print(f"error: two checkpoint keys map to '{key}'", file=sys.stderr)
            return 1
        t = value.detach().to(torch.float32).contiguous()
        tensors[key] = {"shape": list(t.shape),
                        "bytes": t.numpy().astype("<f4").tobytes()}
    write_safetensors(argv[2], tensors)
    print(f"wrote {len(tensors)} tensors to {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
