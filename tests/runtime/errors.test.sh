#!/usr/bin/env bash
# tlm-exec's mistakes, runnable anywhere (no artifact needed): one `error:`
# line and exit 1 each.
#
#   tests/runtime/errors.test.sh BIN_DIR
set -uo pipefail
exec=$1/tlm-exec
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
failed=0
expect() { # expected-line command...
  local want=$1
  shift
  local got
  got=$("$@" 2>&1 >/dev/null)
  local rc=$?
  if [[ $rc -ne 1 || $got != "$want"* ]]; then
    echo "FAIL: $* -> exit $rc, '$got' (expected exit 1, '$want...')"
    failed=1
  else
    echo "ok: $*"
  fi
}
expect "error: unknown command 'compile'" "$exec" compile x.so
expect "error: no model: give the artifact" "$exec" forward --tokens 1
expect "error: artifact: $tmp/none.so: is not a regular file" "$exec" forward "$tmp/none.so" --tokens 1
echo '{}' > "$tmp/model.so"
expect "error: artifact: $tmp/model.so: is not a shared library" "$exec" forward "$tmp/model.so" --tokens 1
expect "error: --opt-level is not an option of 'forward'" "$exec" forward "$tmp/none.so" --opt-level 2
expect "error: --seed expects a non-negative integer, found '-1'" "$exec" generate "$tmp/none.so" --seed -1
"$exec" --help | grep -q "usage: tlm-exec" || { echo "FAIL: --help"; failed=1; }
exit $failed
