#!/usr/bin/env bash
# Installs the Debian packages tlm needs (skipping those already present),
# then configures and builds tlm into build/ (or $TLM_BUILD_DIR); with
# TLM_SANITIZE=address,undefined the build is instrumented (see CMakeLists.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TLM_BUILD_DIR:-$root/build}"

# libclang-rt-22-dev: the sanitizer and libFuzzer runtimes (build-asan, tests/fuzz).
# python3-torch: the converter and PyTorch-baseline tests (tests/tools), with
# OpenBLAS (else torch runs the reference BLAS). g++: the runtime-only build's
# second compiler (scripts/check-runtime-only.sh). python3-matplotlib: the
# training curves (tools/plot_training.py and its test). openmpi-bin and
# libopenmpi-dev: data-parallel training under mpirun (tlm builds without
# them, and then trains in one process). pkgconf: the installed C API's
# test (tests/tools/install.test).
packages=(cmake ninja-build libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
          nlohmann-json3-dev googletest libgtest-dev lld ccache clang-22 libomp-22-dev
          libclang-rt-22-dev python3-torch python3-numpy libopenblas0-pthread g++
          python3-matplotlib openmpi-bin libopenmpi-dev pkgconf)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ccache keys on paths relative to the checkout, so clones elsewhere still hit.
export CCACHE_BASEDIR="$root"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DTLM_SANITIZE="${TLM_SANITIZE:-}" >/dev/null
cmake --build "$build"
