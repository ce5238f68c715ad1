# Reads bench's --json line on stdin; fails unless peak RSS is within budget.
import json
import sys

b = json.loads(sys.stdin.read())
bound = (1.2 * b["weights_mib"] + b["kv_cache_mib"] + b["activations_mib"]
         + b["start_rss_mib"] + b["compile_mib"])
print(f"weights {b['weights_mib']:.1f} MB")
if abs(bound - b["rss_bound_mib"]) > 0.5:
    sys.exit(f"bench's rss_bound_mib {b['rss_bound_mib']} != {bound:.1f}")
if b["peak_rss_mib"] > bound:
    sys.exit(f"peak RSS {b['peak_rss_mib']} MB exceeds the bound {bound:.1f} MB")
print(f"peak {b['peak_rss_mib']:.1f} MB <= bound {bound:.1f} MB")
