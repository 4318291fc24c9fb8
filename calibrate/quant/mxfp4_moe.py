#!/usr/bin/env python3
"""MXFP4 routed-expert GEMMs with 16-bit activations (W4A16 MXFP4), against the same kernel on
bf16 weights, on one GPU: what an engine that dequantizes MXFP4 weights inside a tensor-core GEMM
costs on Hopper (TensorRT-LLM's Triton MoE backend and vLLM's triton_kernels path run GPT-OSS's
MXFP4 experts this way on SM 90: E2M1 weights, one E8M0 scale per 32 weights, bf16 activations).

Our own Triton kernel, not the engines': a batched per-expert GEMM C[e] = A[e] @ W[e]^T with the
same number of tokens M on each of E experts (a balanced grouped GEMM), weights stored [E, N, K/2]
(two E2M1 codes a byte along K, low nibble first) with scales [E, N, K/32]. Variants decode
the weights: `manual` unpacks the nibbles and scales in registers with float ops, `manual_int`
builds the bf16 bits with integer ops (no special-function unit), both then tl.dot in bf16;
`dot_scaled` hands the packed weights and scales to tl.dot_scaled (Triton lowers it to an upcast
on Hopper). `bf16` is the same kernel reading bf16 weights: the ratio of the two compares the
weight format, not the kernel. torch.bmm on bf16 is timed as a reference for the baseline. Each
point takes the fastest of a few tile configurations (as an engine's autotuner would). Shapes: the
GPT-OSS experts (hidden 2880, expert FFN 2880: gate_up N 5760, down N 2880, K 2880; models/
gpt-oss-*.json), E = 32 experts (one GPU of GPT-OSS-120B at EP 4, or GPT-OSS-20B at TP 1).

These are simple, correct kernels written for this measurement (they bound the engines' tuned
kernels from above). Every variant is checked once against a float64 reference. Times are GPU
time per call from CUDA-graph replay (calibrate/sectioned.py graph_time), rotating weight copies
so that the weights come from HBM, random data.

  python3 calibrate/quant/mxfp4_moe.py --out OUTDIR [--budget-s 120] [--quick]

Writes OUTDIR/mxfp4_moe.json (schema servesim-mxfp4-moe/1).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sectioned as S  # noqa: E402
from sectioned import log  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

SCHEMA = "servesim-mxfp4-moe/1"
HIDDEN, EXPERT_FFN = 2880, 2880                      # models/gpt-oss-120b.json and gpt-oss-20b.json
SHAPES = [("gate_up", 2 * EXPERT_FFN, HIDDEN), ("down", HIDDEN, EXPERT_FFN)]
EXPERTS = 32
M_LIST = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
QUICK_M = [1, 16, 256, 2048]
ROTATE_BYTES = 512 * 2**20                           # weight copies cycled per timing (> 50 MB L2)
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


@triton.jit
def _e2m1_decode(codes):
    # codes: int32 values 0..15 (sign bit 3, exponent bits 2-1, mantissa bit 0; bias 1)
    c = codes.to(tl.int32)
    mag = c & 7
    ex = (mag >> 1).to(tl.float32)
    man = (mag & 1).to(tl.float32)
    val = tl.where(ex == 0.0, man * 0.5, (1.0 + man * 0.5) * tl.exp2(ex - 1.0))
    return tl.where((c & 8) != 0, -val, val)


@triton.jit
def _e2m1_scaled_bf16(codes, sc):
    # the same value built from bits, no floating-point ops: a normal E2M1 code (exponent field
    # e > 0, mantissa bit m) is (1 + m/2) x 2^(e-1), bf16 exponent field e + 126 and top mantissa
    # bit m; the subnormal code 1 is 0.5 (field 126); the E8M0 scale 2^(sc-127) is added to the
    # exponent field of every nonzero value; the sign goes to bit 15.
    c = codes
    e = (c >> 1) & 3
    m = c & 1
    mag = tl.where(e == 0, m * (126 << 7), ((e + 126) << 7) | (m << 6))
    mag = tl.where(mag == 0, 0, mag + ((sc - 127) << 7))
    bits = mag | ((c & 8) << 12)
    return bits.to(tl.int16).to(tl.bfloat16, bitcast=True)


@triton.jit(do_not_specialize=["M"])
def _moe_kernel(a_ptr, w_ptr, s_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                MODE: tl.constexpr):
    # MODE 0: bf16 weights [E, N, K]; 1: MXFP4 decoded in registers with float ops; 2: MXFP4
    # through tl.dot_scaled; 3: MXFP4 decoded in registers with integer ops (bits of the bf16).
    # a [E, M, K] bf16, c [E, M, N] bf16; packed weights [E, N, K/2] uint8, scales [E, N, K/32] uint8.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    e = tl.program_id(2).to(tl.int64)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    m_ok = rm < M
    n_ok = rn < N
    rk = tl.arange(0, BK)
    rk2 = tl.arange(0, BK // 2)
    rks = tl.arange(0, BK // 32)
    a_rows = a_ptr + e * M * K + rm.to(tl.int64)[:, None] * K
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        # K need not be a multiple of BK (2880 = 22 x 128 + 64): the tail is masked to zeros
        k_ok = (k0 + rk) < K
        k2_ok = (k0 // 2 + rk2) < K // 2
        ks_ok = (k0 // 32 + rks) < K // 32
        a = tl.load(a_rows + (k0 + rk)[None, :], mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        if MODE == 0:
            w = tl.load(w_ptr + e * N * K + rn.to(tl.int64)[None, :] * K + (k0 + rk)[:, None], mask=n_ok[None, :] & k_ok[:, None],
                        other=0.0)
            acc += tl.dot(a, w)
        elif MODE == 1 or MODE == 3:
            wp = tl.load(w_ptr + e * N * (K // 2) + rn.to(tl.int64)[:, None] * (K // 2) + (k0 // 2 + rk2)[None, :],
                         mask=n_ok[:, None] & k2_ok[None, :], other=0)
            sc = tl.load(s_ptr + e * N * (K // 32) + rn.to(tl.int64)[:, None] * (K // 32) + (k0 // 32 + rks)[None, :],
                         mask=n_ok[:, None] & ks_ok[None, :], other=127)
            wi = wp.to(tl.int32)
            codes = tl.reshape(tl.join(wi & 15, (wi >> 4) & 15), (BN, BK))
            if MODE == 1:
                scale = tl.exp2(sc.to(tl.float32) - 127.0)
                scale = tl.reshape(tl.broadcast_to(scale[:, :, None], (BN, BK // 32, 32)), (BN, BK))
                w = (_e2m1_decode(codes) * scale).to(tl.bfloat16)
            else:
                sci = tl.reshape(tl.broadcast_to(sc.to(tl.int32)[:, :, None], (BN, BK // 32, 32)), (BN, BK))
                w = _e2m1_scaled_bf16(codes, sci)
            acc += tl.dot(a, tl.trans(w))
        else:
            wq = tl.load(w_ptr + e * N * (K // 2) + rn.to(tl.int64)[None, :] * (K // 2) + (k0 // 2 + rk2)[:, None],
                         mask=n_ok[None, :] & k2_ok[:, None], other=0)
            sc = tl.load(s_ptr + e * N * (K // 32) + rn.to(tl.int64)[:, None] * (K // 32) + (k0 // 32 + rks)[None, :],
                         mask=n_ok[:, None] & ks_ok[None, :], other=127)
            acc = tl.dot_scaled(a, None, "bf16", wq, sc, "e2m1", acc)
    cp = c_ptr + e * M * N + rm.to(tl.int64)[:, None] * N + rn[None, :]
    tl.store(cp, acc.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :])


MODES = {"bf16": 0, "manual": 1, "dot_scaled": 2, "manual_int": 3}
TIMED = ("bf16", "dot_scaled", "manual_int")   # "manual" (float decode) is checked, not timed: it is
                                               # slower than both decodes on the H100 (2026-12-07)


def configs(M):
    """(BM, BN, BK, num_warps, num_stages) tried at M tokens per expert (a configuration that does
    not compile, e.g. out of shared memory, is skipped)."""
    if M <= 16:
        return [(16, bn, bk, 4, 4) for bn in (64, 128) for bk in (128, 256)]
    if M <= 64:
        return [(bm, bn, 128, 4, 4) for bm in (32, 64) for bn in (64, 128)]
    if M <= 256:
        return [(64, 128, 128, 4, 4), (64, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3)]
    return [(128, 256, 64, 8, 3), (128, 256, 128, 8, 3), (256, 128, 64, 8, 3), (128, 128, 128, 8, 4)]


def launch(mode, a, w, s, c, M, N, K, cfg):
    BM, BN, BK, warps, stages = cfg
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), a.shape[0])
    _moe_kernel[grid](a, w, s, c, M, N, K, BM=BM, BN=BN, BK=BK, MODE=MODES[mode], num_warps=warps, num_stages=stages)


def random_mxfp4(E, N, K, dev="cuda"):
    """Packed E2M1 codes [E, N, K/2] (uint8) and E8M0 scales [E, N, K/32] (uint8, 2^-8 .. 2^-4)."""
    packed = torch.randint(0, 256, (E, N, K // 2), device=dev, dtype=torch.uint8)
    scales = torch.randint(119, 124, (E, N, K // 32), device=dev, dtype=torch.uint8)
    return packed, scales


def dequant_ref(packed, scales):
    """float64 [E, N, K] from the packed layout (torch only; the kernels' reference)."""
    table = torch.tensor(E2M1 + [-v for v in E2M1], dtype=torch.float64, device=packed.device)
    lo = table[(packed & 15).long()]
    hi = table[(packed >> 4).long()]
    w = torch.stack((lo, hi), dim=-1).reshape(packed.shape[0], packed.shape[1], -1)
    sc = torch.exp2(scales.double() - 127.0).repeat_interleave(32, dim=-1)
    return w * sc


def checks(res):
    E, M, N, K = 2, 33, 256, HIDDEN
    torch.manual_seed(1)
    packed, scales = random_mxfp4(E, N, K)
    a = torch.randn(E, M, K, device="cuda", dtype=torch.bfloat16)
    wd = dequant_ref(packed, scales)
    ref = torch.bmm(a.double(), wd.transpose(1, 2))
    out = {}
    for mode in ("manual", "dot_scaled", "manual_int", "bf16"):
        c = torch.empty(E, M, N, device="cuda", dtype=torch.bfloat16)
        try:
            if mode == "bf16":
                launch(mode, a, wd.to(torch.bfloat16).contiguous(), scales, c, M, N, K, (32, 64, 128, 4, 3))
            else:
                launch(mode, a, packed, scales, c, M, N, K, (32, 64, 128, 4, 3))
            torch.cuda.synchronize()
            err = S.rel_err(torch, c, ref)
            out[mode] = {"rel_err": err, "tol": 2e-2, "ok": bool(err == err and err < 2e-2)}
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            out[mode] = {"error": repr(e)[:400], "ok": False}
        log("check", mode, out[mode])
    res["checks"] = out
    return {m for m, v in out.items() if v["ok"]}


def best_time(mode, ops, A, C, M, N, K):
    """Fastest configuration's GPU time per call (s) and the configuration."""
    best = None
    for cfg in configs(M):
        try:
            calls = [lambda w=w, s=s, cfg=cfg: launch(mode, A, w, s, C, M, N, K, cfg) for w, s in ops]
            calls[0]()
            torch.cuda.synchronize()
            t, _, _ = S.graph_time(torch, calls)
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            log("config failed", mode, M, N, cfg, repr(e)[:200])
            continue
        if best is None or t < best[0]:
            best = (t, list(cfg))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "mxfp4_moe.json")
    t0 = time.time()
    res = {"schema": SCHEMA, "command": "python3 calibrate/quant/mxfp4_moe.py " + " ".join(sys.argv[1:]),
           "env": S.env_info(torch), "experts": EXPERTS, "points": [], "skipped_budget": []}
    ok = checks(res)
    res["modes_timed"] = sorted(ok)
    ms = QUICK_M if args.quick else M_LIST
    for role, N, K in SHAPES:
        E = EXPERTS
        wbytes = {"bf16": E * N * K * 2, "mxfp4": E * N * K // 2 + E * N * K // 32}
        ops = {}
        if "bf16" in ok:
            ops["bf16"] = [(torch.randn(E, N, K, device="cuda", dtype=torch.bfloat16) * 0.02, torch.empty(1, device="cuda"))
                           for _ in range(max(2, min(4, ROTATE_BYTES // wbytes["bf16"])))]
        if ok & {"manual", "dot_scaled", "manual_int"}:
            ops["mxfp4"] = [random_mxfp4(E, N, K) for _ in range(max(2, min(8, ROTATE_BYTES // wbytes["mxfp4"])))]
        for M in ms:
            if time.time() - t0 > args.budget_s:
                res["skipped_budget"].append(f"{role} M={M}")
                continue
            A = torch.randn(E, M, K, device="cuda", dtype=torch.bfloat16)
            C = torch.empty(E, M, N, device="cuda", dtype=torch.bfloat16)
            row = {"role": role, "experts": E, "m": M, "n": N, "k": K, "flop": 2.0 * E * M * N * K,
                   "weight_bytes": wbytes}
            for mode in TIMED:
                if mode not in ok:
                    continue
                b = best_time(mode, ops["bf16" if mode == "bf16" else "mxfp4"], A, C, M, N, K)
                if b:
                    row[mode] = {"s": b[0], "config": b[1], "tflops": row["flop"] / b[0] / 1e12,
                                 "weight_gbps": wbytes["bf16" if mode == "bf16" else "mxfp4"] / b[0] / 1e9}
            try:
                Wt = [w.transpose(1, 2) for w, _ in ops.get("bf16", [])]
                if Wt:
                    t, _, _ = S.graph_time(torch, [lambda w=w: torch.bmm(A, w, out=C) for w in Wt])
                    row["torch_bmm_bf16"] = {"s": t, "tflops": row["flop"] / t / 1e12}
            except Exception as e:  # noqa: BLE001
                torch.cuda.synchronize()
                row["torch_bmm_bf16_error"] = repr(e)[:200]
            res["points"].append(row)
            log(role, "M", M, {k: round(v["s"] * 1e6, 1) for k, v in row.items() if isinstance(v, dict) and "s" in v})
            S.write_json(path, res)
            del A, C
        del ops
        torch.cuda.empty_cache()
    res["seconds"] = time.time() - t0
    S.write_json(path, res)
    log("wrote", path)


if __name__ == "__main__":
    main()
