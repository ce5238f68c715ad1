#!/usr/bin/env python3
"""Assembles every PTX module of a GPU-pipeline output with ptxas -v.

Reads MLIR (tlm-opt --tlm-gpu-pipeline) on stdin, takes each gpu.binary's
`assembly` string (PTX), runs `ptxas -arch=ARCH -v` on it and prints one
line per kernel: its module, registers, spill bytes and shared memory, so a
lit test can hold every kernel to the budget it was designed for. Exits 1
when ptxas rejects a module.
"""
import os
import re
import subprocess
import sys
import tempfile


def unescape(text):
    # MLIR prints a string's non-printable bytes as \XX (hex) and `"`, `\`
    # as \22, \5C.
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def main():
    ptxas = sys.argv[1]
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90"
    mlir = sys.stdin.read()
    binaries = re.findall(r'gpu\.binary @(\w+) .*?assembly = "((?:[^"\\]|\\.)*)"',
                          mlir)
    if not binaries:
        print("error: no gpu.binary with PTX assembly in the input")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name, assembly in binaries:
            path = os.path.join(tmp, name + ".ptx")
            with open(path, "w") as f:
                f.write(unescape(assembly))
            run = subprocess.run([ptxas, "-arch=" + arch, "-v", path, "-o",
                                  os.devnull], capture_output=True, text=True)
            if run.returncode != 0:
                print("error: ptxas rejected %s:\n%s" % (name, run.stderr))
                return 1
            regs = re.search(r"Used (\d+) registers", run.stderr)
            spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads",
                               run.stderr)
            smem = re.search(r"(\d+) bytes smem", run.stderr)
            ptx = unescape(assembly)
            # What the kernel is made of, to tell the forms apart.
            traits = [t for t, pattern in (("v4-loads", r"ld\.global\.v4"),
                                           ("shuffles", r"shfl\.sync"),
                                           ("barriers", r"bar\.sync"),
                                           ("widens", r"cvt\.f32\.b?f16"),
                                           ("tf32-mma", r"mma\.sync\.aligned"
                                            r"\.m16n8k8\.row\.col\.f32\.tf32"),
                                           ("bf16-mma", r"mma\.sync\.aligned"
                                            r"\.m16n8k16\.row\.col\.f32\.bf16"))
                      if re.search(pattern, ptx)]
            print("%s: registers %s, spill stores %s, spill loads %s, smem %s, %s" % (
                name, regs.group(1) if regs else "?",
                spills.group(1) if spills else "?",
                spills.group(2) if spills else "?",
                smem.group(1) if smem else "0", " ".join(traits) or "plain"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
