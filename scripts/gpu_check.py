#!/usr/bin/env python3
"""The GPU device check's comparisons and benchmarks (scripts/gpu-check.sh
runs it after building the runtime): for each model gpu-prepare.sh made, the
GPU's logits against the CPU's (from a prefill, and from one decode step a
token with and without CUDA graphs), stories260K's greedy tokens against the CPU's
(its decode steps launched kernel by kernel and as CUDA graphs), and decode
and prefill speed as fractions of the H200's HBM bandwidth and FP32 peak
(decode both ways; prefill on TF32 tensor cores for NAME-tf32 models, against
the TF32 peak); NAME-no-SWITCH models (a kernel form off) are compared only. Writes one JSON file; exits 1 when a comparison fails.

  gpu_check.py TLM_EXEC PREPARED_DIR OUT_JSON
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from array import array

# The GPU's logits against the CPU's (docs/gpu.md#the-device-check): a
# logit c of a row whose largest magnitude is M passes within
# atol * max(1, M) + rtol * |c|, since an error in the last hidden state
# reaches every logit of its row at the row's scale (small's seeded logits
# reach 282: there summation order alone moves logits near 0 by 3.6e-4,
# torch against the CPU). f32 as cuda-forward.test; tf32 (prefill on
# tensor cores) from an emulation: rounding every projection's inputs as
# cvt.rna.tf32.f32 does moved tiny's, cs336-ts's and small's logits by at
# most 1.0e-3, 3.5e-4 and 6.0e-4 of that scale, so 4x that; bf16 (both
# inputs rounded to bf16, to nearest even) by 6.1e-3, 2.4e-3 and 4.7e-3.
TOLERANCES = {"f32": (1e-4, 1e-3), "tf32": (4e-3, 1e-2),
              "bf16": (2.5e-2, 1e-2)}
# The H200 SXM by its datasheet: HBM3e bandwidth, plain FP32 FMA rate, and
# the dense TF32 tensor-core rate.
HBM_BYTES_S = 4.8e12
FP32_FLOP_S = 67e12
CORES_FLOP_S = {"tf32": 494.7e12, "bf16": 989.4e12}
TIMEOUT_S = 180
# The models whose kernels are timed one by one in an extra bench run.
PROFILED = os.environ.get("TLM_GPU_CHECK_PROFILE", "small").split()


def run(cmd, env=None):
    """(exit code, stdout, stderr, seconds); a hang ends at TIMEOUT_S."""
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=TIMEOUT_S, env=env)
        return p.returncode, p.stdout, p.stderr, time.time() - start
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {TIMEOUT_S} s", time.time() - start
    except OSError as e:
        return 127, "", str(e), time.time() - start


def read_f32(path, name):
    """Tensor `name` of a safetensors file as (shape, array of floats)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    t = header[name]
    assert t["dtype"] == "F32", f"{path}:{name} is {t['dtype']}"
    begin, end = t["data_offsets"]
    values = array("f")
    values.frombytes(data[8 + n + begin:8 + n + end])
    return t["shape"], values


def compare(gpu, cpu, row, tolerance):
    """GPU against CPU logits, rows of `row` values, by TOLERANCES[tolerance]."""
    atol, rtol = TOLERANCES[tolerance]
    outside, worst, bad = 0, 0.0, 0
    if len(gpu) != len(cpu):
        return {"elements": len(cpu), "outside": len(cpu), "nan": 0,
                "max_abs_error": float("inf"), "tolerance": tolerance,
                "error": f"{len(gpu)} GPU logits for {len(cpu)} CPU ones"}
    for start in range(0, len(cpu), row):
        scale = max([1.0] + [abs(c) for c in cpu[start:start + row] if c == c])
        for g, c in zip(gpu[start:start + row], cpu[start:start + row]):
            if g != g or c != c:  # NaN on either side
                bad += 1
                continue
            if g == c:  # equal infinities too
                continue
            err = abs(g - c)
            worst = max(worst, err)
            if err > atol * scale + rtol * abs(c):
                outside += 1
    return {"elements": len(cpu), "outside": outside, "nan": bad,
            "max_abs_error": worst, "tolerance": tolerance}


def main():
    exe, prepared, out_json = sys.argv[1:4]
    results = {"tolerances": TOLERANCES, "models": {}, "pass": True}
    code, smi, _, _ = run(["nvidia-smi", "--query-gpu=name,driver_version,"
                           "memory.total", "--format=csv,noheader"])
    results["device"] = smi.strip() if code == 0 else "nvidia-smi failed"
    tmp = tempfile.mkdtemp()
    with open(os.path.join(prepared, "manifest.txt")) as f:
        manifest = [line.split(maxsplit=3) for line in f if line.strip()]
    for name, artifact, weights, tokens in manifest:
        so = os.path.join(prepared, artifact)
        wflags = [] if weights == "-" else [
            "--weights", os.path.join(prepared, weights)]
        r = {}
        # NAME-tf32, NAME-bf16mma: prefill's projections on TF32 or BF16
        # tensor cores. Their decode steps run the same f32 GEMV kernels as
        # NAME's, so only their prefill is compared and timed.
        cores = "tf32" if "-tf32" in name else \
            "bf16" if "-bf16mma" in name else None
        # NAME-no-SWITCH: a kernel form switched off, to tell which one a
        # failed comparison comes from; its logits are compared, not timed.
        ablation = "-no-" in name
        # The CPU's logits of every position against the GPU's: from one
        # prefill, then from one decode step a token (flash-decoding, the
        # GEMV kernels), kernel by kernel and as CUDA graphs.
        runs = [("forward", [])]
        if not cores:
            runs += [("forward_incremental", ["--incremental"])]
        if not cores and not ablation:
            runs += [("forward_incremental_graphs",
                      ["--incremental", "--cuda-graphs", "on"])]
        for key, extra in runs:
            logits = os.path.join(tmp, name + "." + key + ".st")
            code, _, err, secs = run([exe, "forward", so, *wflags, "--tokens",
                                      tokens.strip(), "--output", logits,
                                      *extra])
            if code != 0:
                r[key] = {"error": err.strip()[-500:], "exit": code}
                results["pass"] = False
                continue
            shape, gpu = read_f32(logits, "logits")
            _, cpu = read_f32(os.path.join(prepared, name + ".cpu.st"),
                              "logits")
            r[key] = compare(gpu, cpu, shape[-1],
                             cores if cores and key == "forward" else "f32")
            r[key]["shape"] = shape
            r[key]["seconds"] = round(secs, 3)
            if r[key]["outside"] or r[key]["nan"]:
                results["pass"] = False
        greedy_file = os.path.join(prepared, name + ".cpu-greedy.txt")
        # The greedy tokens with the decode steps launched kernel by kernel,
        # then as CUDA graphs (--cuda-graphs on).
        for key, graphs in (("greedy", "off"), ("greedy_graphs", "on")):
            if not os.path.exists(greedy_file):
                break
            cpu_ids = open(greedy_file).read().split()
            code, out, err, secs = run(
                [exe, "generate", so, *wflags, "--prompt-tokens", "1",
                 "--max-new-tokens", str(len(cpu_ids)), "--quiet",
                 "--cuda-graphs", graphs])
            gpu_ids = out.split() if code == 0 else []
            same = 0
            while same < min(len(cpu_ids), len(gpu_ids)) and \
                    cpu_ids[same] == gpu_ids[same]:
                same += 1
            r[key] = {"tokens": len(cpu_ids), "same_prefix": same,
                      "equal": gpu_ids == cpu_ids}
            if code != 0:
                r[key]["error"] = err.strip()[-500:]
            if gpu_ids != cpu_ids:
                results["pass"] = False
        if ablation:
            results["models"][name] = r
            continue
        # Speed, batch 1: small's prefill of 512 tokens and 64 decode steps
        # (the figures); the others at bench's defaults, which fit
        # their contexts.
        sizes = ["--prompt-len", "512", "--gen", "64"] \
            if name.startswith("small") else []
        code, out, err, _ = run([exe, "bench", so, *wflags, *sizes,
                                 "--repeat", "3", "--json"])
        if code != 0:
            r["bench"] = {"error": err.strip()[-500:], "exit": code}
            results["pass"] = False
        else:
            b = json.loads(out.strip().splitlines()[-1])
            steps_s = b["decode_tok_s"] / b.get("batch", 1)
            r["bench"] = {k: b[k] for k in (
                "prefill_tok_s", "decode_tok_s", "weight_bytes_per_token",
                "weights_dtype", "params", "compile_ms") if k in b}
            r["bench"]["decode_hbm_fraction"] = \
                b["weight_bytes_per_token"] * steps_s / HBM_BYTES_S
            # 2 FLOPs a parameter a token (the matrices; attention aside).
            flops = 2 * b["params"] * b["prefill_tok_s"]
            if cores:
                r["bench"]["prefill_cores_fraction"] = \
                    flops / CORES_FLOP_S[cores]
                r["bench"]["tensor_cores"] = cores
            else:
                r["bench"]["prefill_fp32_fraction"] = flops / FP32_FLOP_S
        # Decode again with its steps as CUDA graphs.
        if "decode_tok_s" in r["bench"] and not cores:
            code, out, err, _ = run([exe, "bench", so, *wflags, *sizes,
                                     "--repeat", "3", "--json",
                                     "--cuda-graphs", "on"])
            if code != 0:
                r["bench_graphs"] = {"error": err.strip()[-500:], "exit": code}
                results["pass"] = False
            else:
                b = json.loads(out.strip().splitlines()[-1])
                r["bench_graphs"] = {k: b[k] for k in (
                    "decode_tok_s", "cuda_graph_steps",
                    "cuda_graph_instantiations") if k in b}
                r["bench_graphs"]["vs_kernels"] = \
                    b["decode_tok_s"] / r["bench"]["decode_tok_s"]
        # Where small's time goes, kernel by kernel (TLM_CUDA_PROFILE): the
        # first device run's guide to what to speed up next.
        if name in PROFILED and "decode_tok_s" in r["bench"]:
            table = os.path.join(tmp, name + ".profile.tsv")
            env = dict(os.environ, TLM_CUDA_PROFILE=table)
            code, _, err, _ = run([exe, "bench", so, *wflags, *sizes,
                                   "--repeat", "1", "--json"], env=env)
            if code == 0 and os.path.exists(table):
                rows = [line.rstrip("\n").split("\t")
                        for line in open(table)][1:]
                r["profile"] = [{"kernel": k, "launch": l, "calls": int(c),
                                 "total_ms": float(t)}
                                for k, l, c, t, _ in rows[:12]]
            else:
                r["profile"] = {"error": err.strip()[-500:], "exit": code}
        results["models"][name] = r
    # The bf16 goal: small's decode with bf16 weights against f32's, both
    # from this run.
    small = [results["models"].get(n, {}).get("bench", {})
             for n in ("small", "small-bf16")]
    if all("decode_tok_s" in b for b in small):
        results["small_bf16_decode_vs_f32"] = \
            small[1]["decode_tok_s"] / small[0]["decode_tok_s"]
    # Prefill on tensor cores against the FMA tiles, same weights.
    for base, cores in (("small", "tf32"), ("small-bf16", "tf32"),
                        ("small-bf16", "bf16mma")):
        pair = [results["models"].get(n, {}).get("bench", {})
                for n in (base, base + "-" + cores)]
        if all("prefill_tok_s" in b for b in pair):
            results[base.replace("-", "_") + "_" + cores +
                    "_prefill_vs_fma"] = \
                pair[1]["prefill_tok_s"] / pair[0]["prefill_tok_s"]
    with open(out_json, "w") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))
    return 0 if results["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
