#!/usr/bin/env python3
"""Tables from section attention_decode_mmha (calibrate/mmha_batch.sh): per group, KV format and
context, at each batch,
  1. per_head / grouped: one CTA per query head (TensorRT-LLM's masked_multihead_attention form)
     over the grouped kernel (one CTA per kv head, each KV byte read once), time ratio;
  2. per_head_far / grouped: the same with the group's re-reads a whole read of the cache apart
     (no L2 reuse possible), the bound;
  3. per_head / one read: over the group-1 kernel on the same shape (one read of the cache by the
     per-head kernel), i.e. how many reads of the cache the per-head form costs (1 = L2 absorbs
     the re-reads, group = none do);
  4., 5. GB/s: one read of the cache over the grouped (and group-1) and the per_head time.
Standard library only.

  python3 calibrate/mmha_table.py OUTDIR/attention_decode_mmha.json
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        sec = json.load(f)["attention_decode_mmha"]
    recs = sec["records"]
    keys = [(r["form"], r["group"], r["kv_dtype"], r["batch"], r["context"]) for r in recs]
    t = {k: r["time_us"] for k, r in zip(keys, recs)}
    gbs = {k: r["gb_per_s"] for k, r in zip(keys, recs)}
    batches = sorted({r["batch"] for r in recs})
    contexts = sorted({r["context"] for r in recs})
    groups = [g for g in (5, 16, 8, 4) if any(r["group"] == g for r in recs)]
    groups += sorted({r["group"] for r in recs} - set(groups) - {1})
    kvs = [k for k in ("bf16", "fp8_e4m3") if any(r["kv_dtype"] == k for r in recs)]
    checks = sec.get("checks", [])
    print(f"GPU {sec.get('gpu')}, L2 {sec.get('l2_bytes', 0) / 1e6:.1f} MB; block size {sec.get('block_size')}, "
          f"{sec.get('num_kv_heads')} kv heads, head dim {sec.get('head_dim')}; "
          f"checks {sum(c['pass'] for c in checks)}/{len(checks)} pass; "
          f"{len(sec.get('skipped', []))} points skipped (budget); section {sec.get('seconds', 0):.0f} s")
    for c in checks:
        if not c["pass"]:
            print(f"  FAILED check: {c}")

    def ratio(num, den):
        return None if num is None or not den else num / den

    tables = [
        ("per_head / grouped (time ratio)",
         lambda g, k, b, c: ratio(t.get(("per_head", g, k, b, c)), t.get(("grouped", g, k, b, c))), "{:.2f}"),
        ("per_head_far / grouped (no L2 reuse)",
         lambda g, k, b, c: ratio(t.get(("per_head_far", g, k, b, c)), t.get(("grouped", g, k, b, c))), "{:.2f}"),
        ("per_head / one read (group-1 kernel, same shape): reads of the cache",
         lambda g, k, b, c: ratio(t.get(("per_head", g, k, b, c)), t.get(("grouped", 1, k, b, c))), "{:.2f}"),
        ("grouped GB/s (one read of the cache / time; group 1 = the one-read kernel)",
         lambda g, k, b, c: gbs.get(("grouped", g, k, b, c)), "{:.0f}"),
        ("per_head GB/s (one read of the cache / time)",
         lambda g, k, b, c: gbs.get(("per_head", g, k, b, c)), "{:.0f}"),
    ]
    for i, (title, cell, fmt) in enumerate(tables):
        print(f"\n{title}")
        print(f"{'group':>5} {'kv':<9} {'ctx':>5} " + " ".join(f"{'b' + str(b):>7}" for b in batches))
        for g in ([1] if i == 3 else []) + groups:
            for k in kvs:
                for c in contexts:
                    vals = [cell(g, k, b, c) for b in batches]
                    print(f"{g:>5} {k:<9} {c:>5} " + " ".join(f"{'-' if v is None else fmt.format(v):>7}" for v in vals))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
