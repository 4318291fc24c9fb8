#!/usr/bin/env python3
"""Assembles OUTDIR/raw.json (schema servesim-calibration-raw/1) from the per-section fragments
that servesim_calibrate and attention_prefill.py write into OUTDIR/parts/, and checks every
record's keys and types against the schema so the fitter never sees a malformed file.
Also stamps the measured GPU block into reference_steps.json. Standard library only.
"""
import argparse
import datetime
import json
import os
import sys

SCHEMA = "servesim-calibration-raw/1"
GPU_KEYS = {"name": str, "compute_capability": str, "sm_count": int, "l2_bytes": int, "memory_bytes": int,
            "driver": str, "cuda_runtime": str, "sm_clock_mhz_max": int, "mem_clock_mhz": int}
NUM = (int, float)
RECORD_KEYS = {
    "bandwidth": {"op": str, "bytes": int, "time_s": NUM, "bytes_per_s": NUM},
    "gemm": {"dtype": str, "m": int, "n": int, "k": int, "time_s": NUM, "flops_per_s": NUM},
    "quant_gemm": {"dtype": str, "group_size": int, "path": str, "m": int, "n": int, "k": int, "time_s": NUM,
                   "rel_err": NUM},
    "attention_decode": {"batch": int, "context": int, "block_size": int, "num_q_heads": int, "num_kv_heads": int,
                         "head_dim": int, "time_s": NUM, "kv_bytes": int},
    "attention_decode_kv": {"kv_dtype": str, "conversion": str, "unroll": int, "batch": int, "context": int, "block_size": int, "num_q_heads": int,
                            "num_kv_heads": int, "head_dim": int, "time_s": NUM, "kv_bytes": int,
                            "time_over_bf16": NUM},
    "attention_prefill": {"batch": int, "seq_len": int, "num_q_heads": int, "num_kv_heads": int, "head_dim": int,
                          "causal": bool, "impl": str, "time_s": NUM, "flops": NUM},
    "contention": {"case": str, "alone_s": list, "together_s": list},
    "host_copy": {"direction": str, "pinned": bool, "bytes": int, "time_s": NUM},
    "elementwise": {"op": str, "tokens": int, "hidden": int, "bytes": int, "time_s": NUM},
}
ENUMS = {("bandwidth", "op"): {"read", "write", "copy"}, ("gemm", "dtype"): {"bf16", "fp16", "fp8", "int8"},
         ("quant_gemm", "dtype"): {"w4a16", "w8a16"}, ("quant_gemm", "path"): {"gemv", "dequant_gemm"},
         ("contention", "case"): {"copy_copy", "gemm_copy"}, ("host_copy", "direction"): {"h2d", "d2h"},
         ("elementwise", "op"): {"add", "rmsnorm", "silu_mul", "rope"}, ("attention_prefill", "impl"): {"torch_sdpa"},
         ("attention_decode_kv", "kv_dtype"): {"bf16", "fp8_e4m3", "int8", "int4"},
         ("attention_decode_kv", "conversion"): {"shift", "bits", "cvt"}}
LAUNCH_KEYS = ["eager_launch_s", "eager_gpu_gap_s", "graph_node_s", "graph_launch_s", "launch_sync_s"]
ORDER = ["bandwidth", "gemm", "quant_gemm", "attention_decode", "attention_decode_kv", "attention_prefill", "launch", "contention",
         "host_copy", "elementwise"]


def typed(v, t):
    if t is NUM:
        return isinstance(v, NUM) and not isinstance(v, bool)
    if t is int:
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, t)


def check_records(section, recs, problems):
    spec = RECORD_KEYS[section]
    good = []
    for i, r in enumerate(recs):
        bad = []
        if set(r) != set(spec):
            bad.append(f"keys {sorted(r)} != {sorted(spec)}")
        for k, t in spec.items():
            if k in r and not typed(r[k], t):
                bad.append(f"{k}={r[k]!r} is not {getattr(t, '__name__', 'number')}")
            if (section, k) in ENUMS and r.get(k) not in ENUMS[(section, k)]:
                bad.append(f"{k}={r.get(k)!r} not in {sorted(ENUMS[(section, k)])}")
        if "time_s" in spec and typed(r.get("time_s"), NUM) and not r["time_s"] > 0:
            bad.append(f"time_s={r['time_s']} not > 0")
        if bad:
            problems.append(f"{section}[{i}]: " + "; ".join(bad))
        else:
            good.append(r)
    return good


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir")
    ap.add_argument("--command", required=True)
    ap.add_argument("--driver", default="", help="driver version string (nvidia-smi); overrides the API number")
    ap.add_argument("--reference", help="reference_steps.json to stamp with the gpu block")
    args = ap.parse_args()
    parts = os.path.join(args.outdir, "parts")
    problems = []

    raw = {"schema": SCHEMA}
    gpu_path = os.path.join(parts, "gpu.json")
    if os.path.exists(gpu_path):
        gpu = load(gpu_path)["gpu"]
        if args.driver:
            gpu["driver"] = args.driver
        for k, t in GPU_KEYS.items():
            if not typed(gpu.get(k), t):
                problems.append(f"gpu.{k}={gpu.get(k)!r} is not {t.__name__}")
    else:
        gpu = None
        problems.append("gpu: section missing")
    raw["gpu"] = gpu
    raw["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    raw["command"] = args.command
    for sec in ORDER:
        p = os.path.join(parts, f"{sec}.json")
        if not os.path.exists(p):
            problems.append(f"{sec}: section missing (failed or not run)")
            raw[sec] = None if sec == "launch" else []
            continue
        val = load(p)[sec]
        if sec == "launch":
            if set(val) != set(LAUNCH_KEYS) or not all(typed(val[k], NUM) for k in LAUNCH_KEYS):
                problems.append(f"launch: bad keys/types {val}")
            raw[sec] = {k: val.get(k) for k in LAUNCH_KEYS}
        else:
            raw[sec] = check_records(sec, val, problems)
    out = os.path.join(args.outdir, "raw.json")
    with open(out, "w") as f:
        json.dump(raw, f, indent=1)
    counts = ", ".join(f"{s}={len(raw[s]) if isinstance(raw[s], list) else ('ok' if raw[s] else 'missing')}"
                       for s in ORDER)
    print(f"wrote {out}: {counts}")

    if args.reference and os.path.exists(args.reference) and gpu:
        ref = load(args.reference)
        ref["gpu"] = gpu
        with open(args.reference, "w") as f:
            json.dump(ref, f, indent=1)
        print(f"stamped gpu block into {args.reference}")

    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
