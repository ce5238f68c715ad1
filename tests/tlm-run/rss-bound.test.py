# Reads bench's --json line on stdin; fails unless peak RSS is within budget.
import json
import sys

b = json.loads(sys.stdin.read())
bound = (1.2 * b["weights_mb"] + b["kv_cache_mb"] + b["activations_mb"]
         + b["start_rss_mb"] + b["compile_mb"])
print(f"weights {b['weights_mb']:.1f} MB")
if abs(bound - b["rss_bound_mb"]) > 0.5:
    sys.exit(f"bench's rss_bound_mb {b['rss_bound_mb']} != {bound:.1f}")
if b["peak_rss_mb"] > bound:
    sys.exit(f"peak RSS {b['peak_rss_mb']} MB exceeds the bound {bound:.1f} MB")
print(f"peak {b['peak_rss_mb']:.1f} MB <= bound {bound:.1f} MB")
