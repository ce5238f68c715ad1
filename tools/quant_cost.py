#!/usr/bin/env python3
"""What rounding each kind of weight matrix costs in perplexity.

    tools/quant_cost.py --config C.json --weights W.safetensors \\
        --tokens T.safetensors --dtype q8_0 [--tlm-run PATH]

`tlm-run quantize` writes W in the dtype; each kind of matrix (every
layer's `attn.q_proj.weight`, say, or the token embeddings) is then read
back as f32 from that file (docs/spec/config.md#quantized-weights) into W
alone, and `tlm-run eval` measures the perplexity of T. Prints one line a
kind, `KIND RATIO` (the perplexity over W's own), then `all` (every kind
read back into W) and `file` (the quantized file itself, as the compiled
code reads it). `all` and `file` differ only by the order of the sums.

The costs show whether a dtype's loss comes from one matrix (which could
stay wider) or from all of them. Needs numpy; a bad input is one `error:`
line and exit code 1.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

# The F32 writer of the torch converter beside this file (it imports torch
# only when run).
from torch_to_safetensors import write_safetensors

BLOCK = 32  # weights per q8_0 / q4_0 block (docs/spec/config.md)


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def read_safetensors(path):
    """{name: numpy array} of every tensor in `path` (BF16 widened to f32),
    and {name: its dtype in the file}."""
    kinds = {"F32": np.float32, "F16": np.float16, "I8": np.int8,
             "U8": np.uint8, "BF16": np.uint16}
    try:
        with open(path, "rb") as f:
            raw = f.read()
        size = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + size])
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except (struct.error, ValueError):
        fail(f"{path}: not a safetensors file")
    tensors, dtypes = {}, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtypes[name] = entry["dtype"]
        begin, end = (8 + size + o for o in entry["data_offsets"])
        a = np.frombuffer(raw[begin:end], dtype=kinds[entry["dtype"]])
        if entry["dtype"] == "BF16":  # the high half of an f32
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = a.reshape(entry["shape"])
    return tensors, dtypes


def dequantized(stored, name):
    """Matrix `name` of a file `quantize` wrote, as f32."""
    values = stored[name]
    scale = stored.get(name + ".scale")
    if scale is None:  # F32, BF16 or F16: widened already or exactly
        return values.astype(np.float32)
    rows = values.shape[0]
    if values.dtype == np.int8:  # q8_0: d · q
        codes = values.astype(np.float32)
    else:  # q4_0: byte j of a block holds weights j (low) and j + 16 (high)
        blocks = values.reshape(rows, -1, BLOCK // 2)
        codes = np.concatenate([blocks & 15, blocks >> 4], axis=2)
        codes = codes.reshape(rows, -1).astype(np.float32) - 8
    d = np.repeat(scale.astype(np.float32), BLOCK, axis=1)
    return (d * codes).astype(np.float32)


def kind_of(name):
    return name.split(".", 2)[2] if name.startswith("layers.") else name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--weights", required=True, help="f32 weights")
    parser.add_argument("--tokens", required=True, help="token file for eval")
    parser.add_argument("--dtype", required=True,
                        choices=["bf16", "f16", "q8_0", "q4_0"])
    parser.add_argument("--tlm-run", default="tlm-run")
    args = parser.parse_args()

    def tlm(*command):
        try:
            done = subprocess.run([args.tlm_run, *command],
                                  capture_output=True, text=True)
        except OSError as e:
            fail(f"--tlm-run {args.tlm_run}: {e.strerror}")
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            message = lines[-1] if lines else f"tlm-run {command[0]} failed"
            fail(message.removeprefix("error: "))
        return done.stdout

    def perplexity(weights):
        out = tlm("eval", "--config", args.config, "--weights", weights,
                  "--tokens-file", args.tokens, "--json")
        return json.loads(out.strip().splitlines()[-1])["perplexity"]

    with tempfile.TemporaryDirectory() as work:
        original, original_dtypes = read_safetensors(args.weights)
        if any(d != "F32" for d in original_dtypes.values()):
            fail(f"{args.weights}: every tensor must be F32 to measure against")
        quantized = os.path.join(work, "quantized.safetensors")
        tlm("quantize", "--config", args.config, "--weights", args.weights,
            "--dtype", args.dtype, "--output", quantized)
        stored, stored_dtypes = read_safetensors(quantized)
        # The matrices quantize rounds: those it stores other than F32 (a
        # matrix without whole blocks of a quantized dtype stays F32).
        rounded = sorted(n for n in original if stored_dtypes.get(n) != "F32")
        kinds = sorted({kind_of(n) for n in rounded})
        base = perplexity(args.weights)
        trial = os.path.join(work, "trial.safetensors")

        def cost(names):
            tensors = dict(original)
            for n in names:
                tensors[n] = dequantized(stored, n)
            write_safetensors(trial, {
                n: {"bytes": np.ascontiguousarray(a, np.float32).tobytes(),
                    "shape": list(a.shape)} for n, a in tensors.items()})
            return perplexity(trial) / base

        print(f"f32 perplexity {base:.4f}")
        for kind in kinds:
            print(f"{kind} {cost([n for n in rounded if kind_of(n) == kind]):.4f}")
        print(f"all {cost(rounded):.4f}")
        print(f"file {perplexity(quantized) / base:.4f}")


if __name__ == "__main__":
    main()
