#!/usr/bin/env bash
# Fuzzes .mlir input through the CPU pipeline (tests/fuzz/fuzz_mlir.cpp) for
# ${TLM_FUZZ_SECONDS:-60} seconds, from seeds cut out of the dialect and
# pipeline tests (each `// -----` part and each whole file), after replaying
# crashers/mlir/. Exits non-zero on any finding, which is kept in
# crashers/mlir/ as a regression input.
#
#   tests/fuzz/run-mlir-fuzz.sh BUILD_ASAN_DIR
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:?usage: run-mlir-fuzz.sh BUILD_ASAN_DIR}"
fuzzer="$build/bin/fuzz_mlir"
if [ ! -x "$fuzzer" ]; then
  echo "run-mlir-fuzz: $fuzzer not built (a TLM_SANITIZE=address clang build makes it)" >&2
  exit 1
fi
work="$build/fuzz-mlir"
rm -rf "$work" && mkdir -p "$work/corpus" "$root/tests/fuzz/crashers/mlir"
python3 - "$root" "$work/corpus" <<'PY'
import os, sys
root, out = sys.argv[1], sys.argv[2]
n = 0
for d in ["tests/Dialect", "tests/Pipelines", "tests/Conversion"]:
    for name in sorted(os.listdir(os.path.join(root, d))):
        if not name.endswith(".mlir"):
            continue
        text = open(os.path.join(root, d, name)).read()
        for part in text.split("// -----"):
            body = "\n".join(l for l in part.splitlines()
                             if not l.lstrip().startswith("//"))
            if "tlm." in body:
                n += 1
                open(os.path.join(out, f"seed{n:03d}.mlir"), "w").write(body)
                # And with options named (fuzz_mlir.cpp's `//opts` line).
                if n % 4 == 0:
                    open(os.path.join(out, f"seed{n:03d}-opts.mlir"), "w").write(
                        "//opts lanes=1 attention-block=2\n" + body)
print(f"run-mlir-fuzz: {n} seeds")
PY
status=0
for crasher in "$root"/tests/fuzz/crashers/mlir/*; do
  [ -f "$crasher" ] || continue
  if ! "$fuzzer" "$crasher" >/dev/null 2>&1; then
    echo "run-mlir-fuzz: still crashes: $crasher"; status=1
  fi
done
ASAN_OPTIONS=detect_leaks=1 "$fuzzer" -max_total_time="${TLM_FUZZ_SECONDS:-60}" \
  -max_len=4096 -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix="$root/tests/fuzz/crashers/mlir/" "$work/corpus" \
  > "$work/log" 2>&1 || status=1
grep -E "^Done [0-9]+ runs|^#[0-9]+ *DONE" "$work/log" | tail -2
[ $status -eq 0 ] || { echo "run-mlir-fuzz: FINDING (log: $work/log)"; tail -40 "$work/log"; }
exit $status
