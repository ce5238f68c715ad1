"""Compares two `tlm-run train --json` outputs step by step: every loss,
gradient norm and validation loss within a relative tolerance. Prints one
line saying what matched, or the first mismatch and exits 1."""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
rtol = float(sys.argv[3])


def close(x, y):
    return abs(x - y) <= rtol * abs(x)


if a["steps"] != b["steps"]:
    sys.exit("steps: %d vs %d" % (a["steps"], b["steps"]))
for key in ("losses", "grad_norms", "lrs"):
    for step, (x, y) in enumerate(zip(a[key], b[key]), 1):
        if not close(x, y):
            sys.exit("step %d: %s %r vs %r" % (step, key, x, y))
val_a, val_b = a.get("validation", []), b.get("validation", [])
if len(val_a) != len(val_b):
    sys.exit("validations: %d vs %d" % (len(val_a), len(val_b)))
for x, y in zip(val_a, val_b):
    if x["step"] != y["step"] or not close(x["loss"], y["loss"]):
        sys.exit("validation %r vs %r" % (x, y))
print("%d steps and %d validations equal within %g" %
      (a["steps"], len(val_a), rtol))
