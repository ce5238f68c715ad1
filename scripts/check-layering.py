#!/usr/bin/env python3
"""Checks the include layering of the source folders (docs/contributing.md).

Each folder may include only the folders listed for it (and itself, and
upstream headers); a line naming a folder outside that list is reported as
`file:line: folder includes other-folder`, and the script exits 1. It also
reports any cycle between folders.

The runtime (RUNTIME: what -DTLM_RUNTIME_ONLY=ON builds) may include only
the runtime's own headers, the C++ standard library and POSIX, and
lib/support the header-only nlohmann_json (everything else reads and writes
JSON through lib/support/Json.h): a line naming LLVM, MLIR, nlohmann
elsewhere or a compiler-side header of ours is reported as
`file:line: the runtime includes header`.

  scripts/check-layering.py [ROOT]
"""
import os
import re
import sys

# Folder -> the project folders it may include. The ground first.
ALLOWED = {
    "dialect": [],
    "passes/common": ["dialect"],
    "passes/conversion": ["dialect", "passes/common"],
    "passes/cpu": ["dialect", "passes/common"],
    "passes/gpu": ["dialect", "passes/common"],
    "passes/train": ["dialect", "passes/common"],
    "passes/pipelines": ["dialect", "passes/common", "passes/conversion",
                         "passes/cpu", "passes/gpu", "passes/train"],
    "lib/io": [],
    "lib/model": ["lib/io"],
    "lib/parallel": [],
    "lib/runtime/cuda": [],
    "lib/runtime": ["lib/io", "lib/model", "lib/runtime/cuda"],
    "lib/compiler": ["dialect", "passes/common", "passes/cpu",
                     "passes/pipelines", "passes/train", "lib/io", "lib/model", "lib/runtime",
                     "lib/runtime/cuda"],
    "include/tlm": [],
    "lib/capi": ["include/tlm", "lib/io", "lib/model", "lib/runtime"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]')

# The runtime: these folders, whole. The compiler is lib/compiler and the
# passes; the folder a file sits in says which side it is on.
RUNTIME = ["include/tlm", "lib/support", "lib/io", "lib/model", "lib/runtime",
           "lib/capi", "tools/common", "tools/tlm-exec"]
FOREIGN = ("llvm/", "llvm-c/", "mlir/", "mlir-c/")
# Only lib/support may include nlohmann_json.
JSON_LIBRARY, JSON_HOME = "nlohmann/", "lib/support/"
PROJECT = ("dialect/", "passes/", "lib/", "include/", "tools/")


def in_runtime(rel):
    return any(rel.startswith(f + "/") for f in RUNTIME)


def runtime_errors(root):
    """Includes of the runtime's files that leave the runtime."""
    errors = []
    for folder in RUNTIME:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if not name.endswith((".h", ".cpp", ".c")) or not in_runtime(rel):
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = ANY_INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        ours = header.startswith(PROJECT)
                        json = (header.startswith(JSON_LIBRARY) and
                                not rel.startswith(JSON_HOME))
                        if header.startswith(FOREIGN) or json or (
                                ours and not in_runtime(header)):
                            errors.append(f"{rel}:{number}: the runtime "
                                          f"includes {header}")
    return errors



def folder_of(path):
    """The longest ALLOWED key that `path` lies in, or None."""
    best = None
    for folder in ALLOWED:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..")
    errors, edges = [], set()
    for folder in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".def", ".inc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                here = folder_of(rel)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = folder_of(m.group(1))
                        if target is None or target == here:
                            continue
                        edges.add((here, target))
                        if target not in ALLOWED[here]:
                            errors.append(f"{rel}:{number}: {here} includes "
                                          f"{target}")
    # A cycle would need an edge back down the allowed order; report any.
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)

    def reaches(a, b, seen):
        if a == b:
            return True
        seen.add(a)
        return any(reaches(n, b, seen) for n in graph.get(a, ()) if n not in seen)

    for a, b in sorted(edges):
        if reaches(b, a, set()):
            errors.append(f"cycle: {a} -> {b} -> ... -> {a}")
    errors += runtime_errors(root)
    for e in errors:
        print(e)
    print(f"{len(edges)} folder edges, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
