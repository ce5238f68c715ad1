"""Helpers of values-signals.test.

  nan WEIGHTS.st NAME       set element 3 of tensor NAME to NaN, in place
  sigint TLM-RUN ARGS...    start tlm-run, send SIGINT after its first output
  sigterm TLM-RUN ARGS...   the same with SIGTERM
  epipe TLM-RUN ARGS...     run tlm-run with stdout a pipe nobody reads
Each prints what the test checks: the exit code, and the output's shape.
"""
import json
import os
import signal
import struct
import subprocess
import sys


def nan(path, name):
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        start = header[name]["data_offsets"][0]
        f.seek(8 + n + start + 3 * 4)
        f.write(struct.pack("<f", float("nan")))


def interrupt(args, sig):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.read(1)
    p.send_signal(sig)
    rest = p.stdout.read()
    err = p.stderr.read().decode()
    code = p.wait()
    out = (first + rest).decode()
    print("exit", code)
    print("output ends with newline:", out.endswith("\n"))
    print("output ids valid:", all(w.isdigit() for w in out.split()))
    print("stderr:", err.strip())


def epipe(args):
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run(args, stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    print("exit", p.returncode)
    print("stderr:", p.stderr.decode().strip() or "(empty)")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "nan":
        nan(sys.argv[2], sys.argv[3])
    elif what == "sigint":
        interrupt(sys.argv[2:], signal.SIGINT)
    elif what == "sigterm":
        interrupt(sys.argv[2:], signal.SIGTERM)
    else:
        epipe(sys.argv[2:])
