#!/usr/bin/env python3
"""Checks that docs/tlm-run.md documents every flag of tools/common/Flags.def.

Prints each flag the page never names as `--name`, then a count; exits 1 if
any is missing.

  scripts/check-flag-docs.py [ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..")
with open(os.path.join(root, "tools", "common", "Flags.def"),
          encoding="utf-8") as f:
    table = f.read()
with open(os.path.join(root, "docs", "tlm-run.md"), encoding="utf-8") as f:
    page = f.read()
# TLM_FLAG(field, "name", ...): the name is the first string of a row.
names = re.findall(r'^TLM_FLAG\(\w+,\s*"([a-z0-9-]+)"', table, re.MULTILINE)
missing = [n for n in names
           if not re.search(r"`--" + re.escape(n) + r"[ `=|]", page)]
for n in missing:
    print(f"docs/tlm-run.md does not document --{n}")
print(f"{len(names)} flags, {len(missing)} undocumented")
sys.exit(1 if missing or not names else 0)
