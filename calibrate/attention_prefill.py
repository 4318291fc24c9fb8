#!/usr/bin/env python3
"""Prefill (causal) attention timing through PyTorch SDPA, flash backend, bf16, grouped-query.

Part of servesim's calibration (run by run_all.sh): writes {"attention_prefill": [...]} for
merge_raw.py. Decode attention is the CUDA paged kernel in src/bench_attention.cu instead.
Uses only torch and the standard library.
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HEAD_DIM = 128
# (q heads, kv heads): Llama-3-8B and Llama-2/3-70B.
HEAD_CONFIGS = [(32, 8), (64, 8)]
SEQ_LENS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
BATCHES = [1, 2, 4, 8, 16, 32]
MAX_TOKENS = 65536          # batch * seq_len cap, keeps the sweep to seconds
ROTATE_BYTES = 256 << 20    # rotate input sets so small cases don't run from L2


def pick_gqa_mode(hq, hkv):
    """Native GQA (enable_gqa) on the flash backend if this torch supports it, else repeat_kv."""
    q = torch.randn(1, hq, 256, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, hkv, 256, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        ref = F.scaled_dot_product_attention(
            q.float(), k.float().repeat_interleave(hq // hkv, 1), k.float().repeat_interleave(hq // hkv, 1),
            is_causal=True)
        err = ((out.float() - ref).norm() / ref.norm()).item()
        print(f"flash + enable_gqa works, rel_err vs fp32 math {err:.2e}")
        return "enable_gqa"
    except (RuntimeError, TypeError) as e:
        print(f"flash + enable_gqa unavailable ({str(e).splitlines()[0][:120]}); using repeat_kv "
              "(K/V expanded once, outside the timed region)")
        return "repeat_kv"


def time_fn(fn, nrot):
    """Median per-call seconds with CUDA events; short calls are batched per sample."""
    for i in range(3):
        fn(i % nrot)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for i in range(3):
        fn(i % nrot)
    e.record()
    e.synchronize()
    est = s.elapsed_time(e) / 3e3
    inner = max(1, math.ceil(200e-6 / max(est, 1e-7)), nrot if est < 1e-3 else 1)
    reps = max(5, min(20, math.ceil(0.3 / (est * inner))))
    ts = []
    for _ in range(reps):
        s.record()
        for i in range(inner):
            fn(i % nrot)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3 / inner)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("attention_prefill.py: no CUDA device")
    torch.manual_seed(0)
    seq_lens, batches = (SEQ_LENS[:4], BATCHES[:3]) if args.quick else (SEQ_LENS, BATCHES)
    records = []
    modes = {}
    print(f"{'hq':>3} {'hkv':>3} {'batch':>5} {'seq':>6} {'time_us':>10} {'TFLOP/s':>8}")
    for hq, hkv in HEAD_CONFIGS:
        mode = pick_gqa_mode(hq, hkv)
        modes[f"{hq}/{hkv}"] = mode
        for s_len in seq_lens:
            for b in batches:
                if b * s_len > MAX_TOKENS:
                    continue
                set_bytes = b * s_len * (hq + 2 * hkv) * HEAD_DIM * 2
                nrot = max(1, min(64, math.ceil(ROTATE_BYTES / set_bytes)))
                sets = []
                for _ in range(nrot):
                    q = torch.randn(b, hq, s_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
                    k = torch.randn(b, hkv, s_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
                    v = torch.randn(b, hkv, s_len, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
                    if mode == "repeat_kv":
                        k = k.repeat_interleave(hq // hkv, 1)
                        v = v.repeat_interleave(hq // hkv, 1)
                    sets.append((q, k, v))

                def run(i):
                    q, k, v = sets[i]
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        if mode == "enable_gqa":
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

                t = time_fn(run, nrot)
                # Causal: half of the full 2*2*b*h*s*s*d (QK^T and PV).
                flops = 2.0 * 2.0 * b * hq * s_len * s_len * HEAD_DIM / 2.0
                records.append({"batch": b, "seq_len": s_len, "num_q_heads": hq, "num_kv_heads": hkv,
                                "head_dim": HEAD_DIM, "causal": True, "impl": "torch_sdpa",
                                "time_s": t, "flops": flops})
                print(f"{hq:>3} {hkv:>3} {b:>5} {s_len:>6} {t * 1e6:>10.1f} {flops / t / 1e12:>8.1f}", flush=True)
                del sets
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"attention_prefill": records,
                   "attention_prefill_meta": {"torch": torch.__version__, "gqa_mode": modes,
                                              "backend": "FLASH_ATTENTION"}}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
