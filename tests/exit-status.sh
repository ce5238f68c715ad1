#!/bin/sh
# The lit substitutions %exit-stderr and %exit-output (lit.cfg.py): runs the
# command given after the mode, prints its stderr (mode stderr: stdout is
# dropped) or both streams (mode output), then "exit N" with its status, so
# a test can check an error line and an exit code with one FileCheck.
mode=$1
shift
if [ "$mode" = stderr ]; then
  "$@" 2>&1 >/dev/null
else
  "$@" 2>&1
fi
echo "exit $?"
