#!/usr/bin/env python3
"""Compares two `servesim plan --json` answers (bench/plan.sh writes them): the chosen row and each
option's stable rate per replica. Exit 1 when the chosen configuration differs or a rate moved by
more than the tolerance (default 0.02, plan's --tolerance).
Usage: bench/plan_compare.py OLD.json NEW.json [TOLERANCE]"""
import json
import sys


def key(row):
    return (row["hw"], row["quant"], row["tp"], row.get("ep", 1))


def main():
    old, new = (json.load(open(p)) for p in sys.argv[1:3])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
    ok = True
    pick = lambda j: j["cheapest"] and (key(j["cheapest"]), j["cheapest"]["replicas"])
    if pick(old) != pick(new):
        print(f"chosen row differs: {pick(old)} -> {pick(new)}")
        ok = False
    new_rows = {key(r): r for r in new["rows"]}
    worst = 0.0
    for r in old["rows"]:
        n = new_rows.get(key(r))
        a = r.get("stable_qps_per_replica")
        b = n and n.get("stable_qps_per_replica")
        if a == b:  # both absent (no fit) or both 0 (no rate meets the SLO), or the same rate
            continue
        if not a or not b:
            print(f"{key(r)}: stable rate {a} -> {b}")
            ok = ok and a == b
            continue
        rel = abs(b / a - 1.0)
        worst = max(worst, rel)
        if rel > tol:
            print(f"{key(r)}: stable rate {a:.4g} -> {b:.4g} ({100 * rel:.1f}%, over {100 * tol:g}%)")
            ok = False
    print(f"{len(old['rows'])} rows; chosen {'same' if pick(old) == pick(new) else 'DIFFERENT'}; "
          f"largest stable-rate change {100 * worst:.2f}% (tolerance {100 * tol:g}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
