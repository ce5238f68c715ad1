"""Prints the relative L2 distance ||a - b|| / ||a|| between the F32
'logits' of two safetensors files, and fails unless it lies in
[LOW, HIGH]: `rel_l2.py A B LOW HIGH`."""
import json
import math
import struct
import sys


def logits(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    tensor = json.loads(data[8:8 + n])["logits"]
    begin, end = tensor["data_offsets"]
    raw = data[8 + n + begin:8 + n + end]
    return struct.unpack(f"<{len(raw) // 4}f", raw)


a, b = logits(sys.argv[1]), logits(sys.argv[2])
low, high = float(sys.argv[3]), float(sys.argv[4])
rel = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b))) / math.sqrt(
    sum(x * x for x in a))
print(f"relative L2 {rel:.6f}")
if not low <= rel <= high:
    sys.exit(f"relative L2 {rel:.6f} is outside [{low}, {high}]")
