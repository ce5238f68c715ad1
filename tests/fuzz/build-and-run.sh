#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (ASan + UBSan), replays the
# saved crashers of tests/fuzz/crashers/<target>/ as a regression check,
# then fuzzes each target for ${TLM_FUZZ_SECONDS:-60} seconds from a copy of
# its seed corpus (tests/fuzz/corpus/<target>/ is never modified).
#
#   tests/fuzz/build-and-run.sh [BUILD_DIR]      (default: <repo>/build-fuzz)
#
# Environment:
#   TLM_FUZZ_SECONDS     seconds of fuzzing per target (default 60; 0 = only
#                        build and replay the crashers)
#   TLM_FUZZ_TARGETS     targets to run (default "config json safetensors tokenizer hf_tokenizer tokens")
#   TLM_FUZZ_INVARIANTS  1: the targets also abort on broken parser promises
#                        (see tests/fuzz/FuzzUtil.h); default off. Then the
#                        inputs of tests/fuzz/invariants/<target>/ are
#                        replayed too, and new findings are saved there
#                        rather than in crashers/.
#   TLM_FUZZ_NICE        nice level of compiles and runs (default 19)
#   CXX                  compiler (default clang++-22)
#
# Exits non-zero if a build fails, a saved crasher still crashes, or fuzzing
# finds a crash, leak, timeout or OOM; new crash inputs are copied to
# tests/fuzz/crashers/<target>/ (invariants/<target>/ with
# TLM_FUZZ_INVARIANTS=1) to be kept as regression inputs.
set -u -o pipefail

FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$FUZZ_DIR/../.." && pwd)
BUILD=${1:-$ROOT/build-fuzz}
SECS=${TLM_FUZZ_SECONDS:-60}
TARGETS=${TLM_FUZZ_TARGETS:-config json safetensors tokenizer hf_tokenizer tokens}
NICE="nice -n ${TLM_FUZZ_NICE:-19}"
CXX=${CXX:-clang++-22}
INVARIANTS=0
case ${TLM_FUZZ_INVARIANTS:-0} in '' | 0) ;; *) INVARIANTS=1 ;; esac
export TLM_FUZZ_INVARIANTS=$INVARIANTS
SAVE_DIR=crashers REPLAY_DIRS=crashers
((INVARIANTS)) && SAVE_DIR=invariants REPLAY_DIRS="crashers invariants"

# The parsers are the runtime's: no LLVM library is linked.
# shellcheck disable=SC2054  # commas inside -fsanitize= and -Wl, are meant
CXXFLAGS=(-std=c++17 -fno-exceptions -g -O1
          -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
          -I"$ROOT")
LDFLAGS=()

sources_of() {
  case $1 in
    config) echo lib/model/ConfigJson.cpp lib/model/Config.cpp \
                 lib/io/SafeTensors.cpp lib/io/MapGuard.cpp lib/io/LargeBuffer.cpp lib/io/FileIO.cpp \
                 lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    safetensors) echo lib/io/SafeTensors.cpp lib/io/MapGuard.cpp lib/io/LargeBuffer.cpp \
                      lib/io/FileIO.cpp lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    tokens) echo lib/io/TokenFile.cpp lib/io/SafeTensors.cpp lib/io/MapGuard.cpp \
                 lib/io/LargeBuffer.cpp lib/io/FileIO.cpp \
                 lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    tokenizer) echo lib/io/Tokenizer.cpp lib/io/LlamaTokenizer.cpp \
                    lib/io/Gpt2Tokenizer.cpp lib/io/Gpt2PreTokenizer.cpp \
                    lib/io/HfTokenizer.cpp lib/io/HfTokenizerLoad.cpp lib/io/ByteAlphabet.cpp \
                    lib/io/FileIO.cpp lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    hf_tokenizer) echo lib/io/Tokenizer.cpp lib/io/LlamaTokenizer.cpp \
                       lib/io/Gpt2Tokenizer.cpp lib/io/Gpt2PreTokenizer.cpp \
                       lib/io/HfTokenizer.cpp lib/io/HfTokenizerLoad.cpp lib/io/ByteAlphabet.cpp \
                       lib/io/FileIO.cpp lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    json) echo lib/support/Json.cpp lib/support/JsonParse.cpp ;;
    *) echo "unknown target '$1'" >&2; return 1 ;;
  esac
}
extra_args_of() {
  case $1 in
    config) echo -max_len=4096 ;;
    json) echo -max_len=4096 ;;
    safetensors) echo -max_len=65536 ;;
    tokens) echo -max_len=4096 ;;
    tokenizer) echo -max_len=8192 ;;
    hf_tokenizer) echo -max_len=16384 ;;
  esac
}

start=$(date +%s)
status=0
mkdir -p "$BUILD/obj" "$BUILD/bin" || exit 1

# An object is rebuilt when missing or older than its source, any header of
# lib/ or tests/fuzz/, or this script.
compile() { # src obj
  local src=$1 obj=$2
  if [[ -f $obj && $obj -nt $src && $obj -nt ${BASH_SOURCE[0]} ]] &&
     ! find "$ROOT/lib" "$FUZZ_DIR" -name '*.h' -newer "$obj" | grep -q .; then
    return 0
  fi
  echo "  compile ${src#"$ROOT"/}"
  $NICE "$CXX" "${CXXFLAGS[@]}" -c "$src" -o "$obj"
}

echo "== build ($BUILD)"
for t in $TARGETS; do
  srcs=$(sources_of "$t") || exit 2
  objs=()
  ok=1
  for s in $srcs tests/fuzz/fuzz_$t.cpp; do
    obj="$BUILD/obj/$(echo "$s" | tr / _).o"
    compile "$ROOT/$s" "$obj" || { ok=0; break; }
    objs+=("$obj")
  done
  bin="$BUILD/bin/fuzz_$t"
  if ((ok)); then
    need_link=0
    [[ -x $bin ]] || need_link=1
    for o in "${objs[@]}"; do [[ $o -nt $bin ]] && need_link=1; done
    if ((need_link)); then
      echo "  link bin/fuzz_$t"
      $NICE "$CXX" "${CXXFLAGS[@]}" "${objs[@]}" "${LDFLAGS[@]}" -o "$bin" ||
        ok=0
    fi
  fi
  if ((!ok)); then
    echo "BUILD FAILED: fuzz_$t" >&2
    exit 1
  fi
done
build_end=$(date +%s)
echo "   build took $((build_end - start)) s"

# Replays every saved input, one process each so every one is reported.
echo "== regression: tests/fuzz/{${REPLAY_DIRS// /,}}/<target>/"
for t in $TARGETS; do
  for kind in $REPLAY_DIRS; do
    dir="$FUZZ_DIR/$kind/$t"
    [[ -d $dir ]] || continue
    shopt -s nullglob
    files=("$dir"/*)
    shopt -u nullglob
    for f in "${files[@]}"; do
      [[ -f $f ]] || continue
      case $(basename "$f") in README* | *.md | *.txt) continue ;; esac
      log="$BUILD/regress-$t-$(basename "$f").log"
      if $NICE "$BUILD/bin/fuzz_$t" -rss_limit_mb=2048 -timeout=60 "$f" \
           >"$log" 2>&1; then
        echo "  ok       $kind/$t/$(basename "$f")"
      else
        echo "  CRASHES  $kind/$t/$(basename "$f")   (log: $log)"
        grep -m1 -E 'ERROR: |runtime error|invariant violated|deadly signal' \
          "$log" | sed 's/^/           /'
        status=1
      fi
    done
  done
done

if ((SECS > 0)); then
  echo "== fuzz: ${SECS} s per target (invariant checks: $( ((INVARIANTS)) && echo on || echo off))"
  for t in $TARGETS; do
    work="$BUILD/corpus/$t" art="$BUILD/artifacts/$t"
    rm -rf "$work" "$art"
    mkdir -p "$work" "$art/"
    cp "$FUZZ_DIR/corpus/$t"/* "$work"/ 2>/dev/null
    dict=()
    [[ -f $FUZZ_DIR/$t.dict ]] && dict=(-dict="$FUZZ_DIR/$t.dict")
    log="$BUILD/fuzz-$t.log"
    t0=$(date +%s)
    # shellcheck disable=SC2046
    $NICE "$BUILD/bin/fuzz_$t" -max_total_time="$SECS" -rss_limit_mb=2048 \
      -timeout=25 -print_final_stats=1 -artifact_prefix="$art/" \
      "${dict[@]}" $(extra_args_of "$t") "$work" >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
            tail -1 | grep -o '[0-9]*$')
    cov=$(grep -oE '(cov|ft): [0-9]+' "$log" | tail -2 | tr '\n' ' ')
    printf '  %-12s rc=%d  execs=%s  %s (%d s, corpus %d files, log %s)\n' \
      "$t" "$rc" "${execs:-?}" "$cov" "$(($(date +%s) - t0))" \
      "$(find "$work" -type f | wc -l)" "$log"
    shopt -s nullglob
    found=("$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*)
    shopt -u nullglob
    if ((rc != 0 || ${#found[@]} > 0)); then
      status=1
      echo "  FAILURE in $t:"
      grep -m3 -E 'ERROR: |runtime error|invariant violated|deadly signal' \
        "$log" | sed 's/^/    /'
      mkdir -p "$FUZZ_DIR/$SAVE_DIR/$t"
      for f in "${found[@]}"; do
        cp "$f" "$FUZZ_DIR/$SAVE_DIR/$t/"
        echo "    saved tests/fuzz/$SAVE_DIR/$t/$(basename "$f")"
      done
    fi
  done
fi

echo "== total $(($(date +%s) - start)) s; $( ((status)) && echo FAILED || echo ok)"
exit $status
