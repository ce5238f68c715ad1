#!/usr/bin/env python3
"""Training curves of tlm runs: `tlm-run train --out-dir` folders.

    tools/plot_training.py runs/a runs/b ... -o curves.png [--smooth 20]

Draws the training loss (a running mean over --smooth steps) and the
validation loss of every run, against steps (left) and against wall time
(right), as CS336 asks for both; one color a run, named by its folder.
Reads each folder's metrics.jsonl (docs/training.md#runs-and-checkpoints).
Needs Debian's python3-matplotlib.
"""
import argparse
import json
import os
import sys


def read_run(folder):
    path = os.path.join(folder, "metrics.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        sys.exit(f"error: {path}: {e}")
    train = [m for m in lines if "train_loss" in m]
    val = [m for m in lines if "val_loss" in m]
    if not train and not val:
        sys.exit(f"error: {path}: no train_loss or val_loss lines")
    return train, val


def running_mean(values, window):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders (--out-dir)")
    parser.add_argument("-o", "--output", required=True, help="the figure (.png, .svg, .pdf)")
    parser.add_argument("--smooth", type=int, default=20, help="steps the training loss is averaged over")
    parser.add_argument("--ymax", type=float, help="the loss axis's top (default: 4 x the lowest final "
                        "validation loss, so that one diverging start does not flatten the rest)")
    args = parser.parse_args()
    if args.smooth < 1:
        sys.exit("error: --smooth must be at least 1")
    runs = [(os.path.basename(os.path.normpath(r)), *read_run(r)) for r in args.runs]

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, (name, train, val) in enumerate(runs):
        color = f"C{i % 10}"
        if train:
            loss = running_mean([m["train_loss"] for m in train], args.smooth)
            by_step.plot([m["step"] for m in train], loss, color=color, alpha=0.5, lw=1)
            by_time.plot([m["time_s"] for m in train], loss, color=color, alpha=0.5, lw=1)
        if val:
            by_step.plot([m["step"] for m in val], [m["val_loss"] for m in val],
                         color=color, marker="o", ms=3, label=name)
            by_time.plot([m["time_s"] for m in val], [m["val_loss"] for m in val],
                         color=color, marker="o", ms=3, label=name)
    finals = [val[-1]["val_loss"] for _, _, val in runs if val]
    ymax = args.ymax if args.ymax else (4 * min(finals) if finals else None)
    for ax, x in ((by_step, "step"), (by_time, "wall time (s)")):
        if ymax:
            ax.set_ylim(top=ymax)
        ax.set_xlabel(x)
        ax.set_ylabel("loss (thin: train, running mean; dots: validation)")
        ax.grid(alpha=0.3)
    by_step.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output} ({len(runs)} runs)")


if __name__ == "__main__":
    main()
