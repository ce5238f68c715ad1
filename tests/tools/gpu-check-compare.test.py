import sys

sys.dont_write_bytecode = True  # nothing written into scripts/
sys.path.insert(0, sys.argv[1])
import gpu_check  # noqa: E402

c = gpu_check.compare
big, small = [282.0, 0.0], [0.5, 0.0]
print("near zero in a large row: 0.02 -> %d, 0.03 -> %d" % (
    c([282.0, 0.02], big, 2, "f32")["outside"],
    c([282.0, 0.03], big, 2, "f32")["outside"]))
print("near zero in a small row: 5e-05 -> %d, 0.0002 -> %d" % (
    c([0.5, 5e-5], small, 2, "f32")["outside"],
    c([0.5, 2e-4], small, 2, "f32")["outside"]))
# Two rows: the large one first, so a scale leaking into the next row
# would let 0.0002 pass.
two = c([282.0, 0.0, 0.5, 2e-4], big + small, 2, "f32")
assert two["outside"] == 1, two
print("tf32: 1.0 -> %d, 1.2 -> %d, large 3.9 -> %d, large 4.0 -> %d" % (
    c([282.0, 1.0], big, 2, "tf32")["outside"],
    c([282.0, 1.2], big, 2, "tf32")["outside"],
    c([282.0 + 3.9, 0.0], big, 2, "tf32")["outside"],
    c([282.0 + 4.0, 0.0], big, 2, "tf32")["outside"]))
inf = float("inf")
print("nan %d, inf outside %d" % (
    c([float("nan"), 0.0], small, 2, "f32")["nan"],
    c([inf, 0.0], [inf, 0.0], 2, "f32")["outside"]))
m = c([1.0, 2.0, 3.0], [1.0, 2.0], 2, "f32")
print("mismatch: %d outside, %s" % (m["outside"], m["error"]))
