#!/usr/bin/env bash
# Builds the runtime alone (-DTLM_RUNTIME_ONLY=ON) as a machine without LLVM
# would, and runs its tests (tests/runtime) against artifacts and answers
# made by the full build BUILD_DIR's tlm-run. The runtime-only build is a
# clean folder configured with LLVM, MLIR and nlohmann_json's CMake package
# ruled out (nlohmann's headers are then found as a plain folder, as on a
# machine they were copied to) and GCC rather than clang, so a dependency on
# the compiler's toolchain cannot slip in.
#
#   scripts/check-runtime-only.sh BUILD_DIR [SANITIZERS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=$(cd "$1" && pwd)
sanitize=${2:-}
out=$build/runtime-only
"$root/scripts/make-runtime-fixtures.sh" "$build/bin/tlm-run" "$out/fixtures"
cxx=$(command -v g++ || command -v c++)
cc=$(command -v gcc || command -v cc)
rm -rf "$out/build"
cmake -G Ninja -S "$root" -B "$out/build" -DTLM_RUNTIME_ONLY=ON \
  -DTLM_RUNTIME_FIXTURES="$out/fixtures" -DTLM_SANITIZE="$sanitize" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON >/dev/null
cmake --build "$out/build" -j 2
ctest --test-dir "$out/build" --output-on-failure
