"""Reads `tlm-run train --json` and checks a scheduled run with validation:
the step count, the validation loss falling from the first evaluation to
the last, and the rates: 0 at step 0, rising to the maximum at the end of
the warmup, the minimum at the last step. Prints what held; exits 1 on the
first thing that did not."""
import json
import math
import sys

path, steps, max_lr, min_lr, warmup = sys.argv[1:6]
steps, warmup = int(steps), int(warmup)
max_lr, min_lr = float(max_lr), float(min_lr)
run = json.load(open(path))


def fail(why):
    print(why)
    sys.exit(1)


if run["steps"] != steps or len(run["losses"]) != steps:
    fail(f"{len(run['losses'])} losses for {steps} steps")
val = run["validation"]
at = [v["step"] for v in val]
losses = [v["loss"] for v in val]
if not all(b < a for a, b in zip(losses, losses[1:])):
    fail(f"validation losses {losses} at steps {at} do not fall")
print(f"{steps} steps; validation at {', '.join(map(str, at))} falls")
lrs = run["lrs"]
close = lambda a, b: math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
if not close(lrs[0], 0.0) or not close(lrs[warmup], max_lr) or not close(lrs[-1], min_lr):
    fail(f"rates {lrs[0]}, {lrs[warmup]}, {lrs[-1]} at steps 0, {warmup}, last")
if any(b < a for a, b in zip(lrs[:warmup], lrs[1:warmup + 1])):
    fail("the warmup does not rise")
print(f"rates: warmup from 0, {sys.argv[3]} at step {warmup}, {sys.argv[4]} at the last")
