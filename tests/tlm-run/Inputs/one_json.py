"""Checks that a file (a command's stdout under --json) is one JSON object
and nothing else, and that it has the keys named on the command line;
KEY=VALUE also checks the value (compared as JSON text). Prints the keys."""
import json
import sys

text = open(sys.argv[1], encoding="utf-8").read()
try:
    doc = json.loads(text)
except json.JSONDecodeError as e:
    sys.exit(f"{sys.argv[1]}: not one JSON document: {e}: {text[:200]!r}")
if not isinstance(doc, dict):
    sys.exit(f"{sys.argv[1]}: a JSON {type(doc).__name__}, not an object")
for want in sys.argv[2:]:
    key, _, value = want.partition("=")
    if key not in doc:
        sys.exit(f"{sys.argv[1]}: no key {key!r} in {sorted(doc)}")
    if value and json.dumps(doc[key]) != value:
        sys.exit(f"{sys.argv[1]}: {key} is {json.dumps(doc[key])}, not {value}")
print(" ".join(sorted(doc)))
