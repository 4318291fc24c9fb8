#!/usr/bin/env python3
"""Independent H200 measurements for validating servesim on runs its fit never saw.

Unlike calibrate/ (our own CUDA kernels, used to FIT hardware profiles), this script times what
users actually run: plain PyTorch decoders (cuBLAS through F.linear, SDPA over a preallocated KV
cache, HF-style unfused RMSNorm and RoPE) under CUDA graphs and eagerly, GEMMs through
torch.matmul / torch._scaled_mm, SDPA attention kernels, a Mixtral-shaped MoE block with grouped
expert GEMMs, and Hugging Face transformers generate() and generate_batch() (continuous
batching). Model shapes come from the repository's models/*.json, so servesim and the
measurement share one definition.

Usage (on a machine with a CUDA GPU, torch, and for the hf sections transformers):
  python3 calibrate/independent/measure.py --out OUTDIR [--sections gemm,attention,...] [--quick]
Each section runs in its own child process with a time limit and writes OUTDIR/<section>.json
(schema servesim-independent/1); a failing section loses only its own file. Random bf16 weights,
no downloads. Results are committed under calibrate/results/h200/independent/ with the command
and date (see the README there).
"""
import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T0 = time.time()

# Dense models measured end to end (models/<name>.json). Mixtral is measured as an MoE block.
DENSE_MODELS = ["llama-3-8b", "qwen2-7b", "phi-3-mini", "llama-2-13b", "mistral-7b", "llama-2-7b"]
# Attributes that the bundled cards do not carry but the real models have (config.json on the Hub).
QKV_BIAS = {"qwen2-7b": True}
ROPE_THETA = {"llama-3-8b": 500000.0, "qwen2-7b": 1000000.0, "mistral-7b": 1000000.0}

DECODE_B = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DECODE_C = [128, 512, 2048, 8192]
PREFILL_S = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
PREFILL_B4_MAX_S = 1024          # also B=4 prompts up to this length (batched small prefills)
KV_LIMIT_BYTES = 60e9
GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
ROTATE_BYTES = 256 * 2**20       # operands rotate over at least this much memory (L2 is 60 MiB)


_FLUSH = [None]


def flush():
    """Write the running section's results so far (a section killed at its time limit keeps them)."""
    if _FLUSH[0]:
        _FLUSH[0]()


def log(*a):
    print(f"[{time.time() - T0:7.1f}s]", *a, flush=True)


def load_card(name):
    with open(os.path.join(REPO, "models", name + ".json")) as f:
        c = json.load(f)
    return {"name": name, "layers": c["num_layers"], "hidden": c["hidden_size"], "hq": c["num_attention_heads"],
            "hkv": c["num_kv_heads"], "hd": c["head_dim"], "ffn": c["ffn_size"], "vocab": c["vocab_size"],
            "max_ctx": c["max_context_tokens"], "qkv_bias": QKV_BIAS.get(name, False),
            "rope_theta": ROPE_THETA.get(name, 10000.0)}


# ----------------------------------------------------------------------------------------------
# timing helpers


def event_median(torch, fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        s[i].record()
        fn()
        e[i].record()
    torch.cuda.synchronize()
    ts = sorted(s[i].elapsed_time(e[i]) / 1e3 for i in range(reps))
    return statistics.median(ts), ts[0], ts[-1]


def wall_median(torch, fn, warmup, reps):
    """Host wall time per call with a sync after each: what an eager, host-bound step costs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def capture(torch, fn, warm=2):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def graph_time_per_call(torch, calls, min_sample_s=2e-4, replays=10):
    """GPU time of one call, measured as calibrate/src/common.cu does: K back-to-back calls (over
    rotating operands) captured in one CUDA graph, replayed; median replay / K."""
    n = len(calls)
    # estimate one call
    for c in calls[: min(n, 3)]:
        c()
    torch.cuda.synchronize()
    est, _, _ = event_median(torch, lambda: [c() for c in calls], 1, 3)
    per = max(est / n, 1e-7)
    k = max(n, int(math.ceil(min_sample_s / per)))
    k = min(k, 4096)
    seq = [calls[i % n] for i in range(k)]
    g = capture(torch, lambda: [c() for c in seq], warm=1)
    med, lo, hi = event_median(torch, g.replay, 2, replays)
    del g
    return med / k, k


def profile_kernels(torch, fn, top=40):
    """Per-kernel CUDA time of one call of fn (eager), from the torch profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = []
    for ka in prof.key_averages():
        t_us = getattr(ka, "device_time_total", None)
        if t_us is None:
            t_us = getattr(ka, "cuda_time_total", 0.0)
        if t_us and t_us > 0:
            rows.append({"kernel": ka.key[:160], "count": ka.count, "time_s": t_us / 1e6})
    rows.sort(key=lambda r: -r["time_s"])
    return {"kernels": sum(r["count"] for r in rows), "gpu_s": sum(r["time_s"] for r in rows), "top": rows[:top]}


# ----------------------------------------------------------------------------------------------
# a plain-PyTorch decoder (Llama family), HF-style math


class Decoder:
    """Llama-family decoder in plain PyTorch: fused QKV and gate_up projections (F.linear,
    cuBLAS), HF LlamaRMSNorm (fp32 statistics, unfused), HF rotate_half RoPE, SDPA with native GQA
    over a contiguous preallocated KV cache, untied LM head, greedy argmax sampling."""

    def __init__(self, torch, F, card):
        self.torch, self.F, self.c = torch, F, card
        dev, dt = "cuda", torch.bfloat16
        g = torch.Generator(device=dev).manual_seed(0)
        H, hq, hkv, hd, ffn, V = card["hidden"], card["hq"], card["hkv"], card["hd"], card["ffn"], card["vocab"]

        def w(*shape, scale=0.02):
            return torch.randn(*shape, device=dev, dtype=dt, generator=g) * scale

        self.embed = w(V, H, scale=1.0)
        self.layers = []
        for _ in range(card["layers"]):
            self.layers.append({
                "ln1": 1.0 + w(H, scale=0.1), "wqkv": w((hq + 2 * hkv) * hd, H),
                "bqkv": w((hq + 2 * hkv) * hd) if card["qkv_bias"] else None,
                "wo": w(H, hq * hd), "ln2": 1.0 + w(H, scale=0.1), "wgu": w(2 * ffn, H), "wd": w(H, ffn)})
        self.norm = 1.0 + w(H, scale=0.1)
        self.lm_head = w(V, H)
        inv = 1.0 / (card["rope_theta"] ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
        pos = torch.arange(0, 16384 + 2, device=dev, dtype=torch.float32)
        emb = torch.cat((torch.outer(pos, inv),) * 2, dim=-1)
        self.cos, self.sin = emb.cos().to(dt), emb.sin().to(dt)
        self.gqa = hq != hkv

    def rmsnorm(self, x, w):
        xf = x.float()
        xf = xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        return w * xf.to(x.dtype)

    def rope(self, x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + self.torch.cat((-x2, x1), dim=-1) * sin

    def mlp(self, x, L):
        h = self.rmsnorm(x, L["ln2"])
        gate, up = self.F.linear(h, L["wgu"]).chunk(2, dim=-1)
        return x + self.F.linear(self.F.silu(gate) * up, L["wd"])

    def new_kv(self, B, C):
        c = self.c
        return [self.torch.empty(2, B, c["hkv"], C, c["hd"], device="cuda", dtype=self.torch.bfloat16).normal_()
                for _ in range(c["layers"])]

    def decode(self, tokens, ctx, kv):
        """tokens [B]; kv[l] [2, B, hkv, ctx+1, hd] holds ctx earlier tokens; writes position ctx."""
        torch, F, c = self.torch, self.F, self.c
        B = tokens.shape[0]
        hq, hkv, hd = c["hq"], c["hkv"], c["hd"]
        x = F.embedding(tokens, self.embed)
        cos, sin = self.cos[ctx:ctx + 1], self.sin[ctx:ctx + 1]
        for li, L in enumerate(self.layers):
            h = self.rmsnorm(x, L["ln1"])
            q, k, v = F.linear(h, L["wqkv"], L["bqkv"]).split([hq * hd, hkv * hd, hkv * hd], dim=-1)
            q = self.rope(q.view(B, hq, 1, hd), cos, sin)
            k = self.rope(k.view(B, hkv, 1, hd), cos, sin)
            kv[li][0, :, :, ctx:ctx + 1] = k
            kv[li][1, :, :, ctx:ctx + 1] = v.view(B, hkv, 1, hd)
            o = F.scaled_dot_product_attention(q, kv[li][0], kv[li][1], enable_gqa=self.gqa)
            x = x + F.linear(o.reshape(B, hq * hd), L["wo"])
            x = self.mlp(x, L)
        logits = F.linear(self.rmsnorm(x, self.norm), self.lm_head)
        return torch.argmax(logits, dim=-1)

    def prefill(self, tokens, kv):
        """tokens [B, S]; fills kv[l] [2, B, hkv, S, hd]; samples from the last position only."""
        torch, F, c = self.torch, self.F, self.c
        B, S = tokens.shape
        hq, hkv, hd = c["hq"], c["hkv"], c["hd"]
        x = F.embedding(tokens, self.embed)
        cos, sin = self.cos[:S], self.sin[:S]
        for li, L in enumerate(self.layers):
            h = self.rmsnorm(x, L["ln1"])
            q, k, v = F.linear(h, L["wqkv"], L["bqkv"]).split([hq * hd, hkv * hd, hkv * hd], dim=-1)
            q = self.rope(q.view(B, S, hq, hd).transpose(1, 2), cos, sin)
            k = self.rope(k.view(B, S, hkv, hd).transpose(1, 2), cos, sin)
            v = v.view(B, S, hkv, hd).transpose(1, 2)
            kv[li][0].copy_(k)
            kv[li][1].copy_(v)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.gqa)
            x = x + F.linear(o.transpose(1, 2).reshape(B, S, hq * hd), L["wo"])
            x = self.mlp(x, L)
        logits = F.linear(self.rmsnorm(x[:, -1], self.norm), self.lm_head)
        return torch.argmax(logits, dim=-1)


def section_model(torch, F, name, quick, res):
    """Decode (B x C) and prefill (S) steps of one dense model: CUDA graph replay and eager."""
    card = load_card(name)
    res["model"] = card
    t = time.time()
    m = Decoder(torch, F, card)
    torch.cuda.synchronize()
    res["build_s"] = time.time() - t
    kv_tok = 2 * card["layers"] * card["hkv"] * card["hd"] * 2
    res["decode"], res["prefill"], res["profiles"] = [], [], {}
    gen = torch.Generator(device="cuda").manual_seed(1)
    bs = DECODE_B if not quick else [1, 64]
    cs = DECODE_C if not quick else [512]
    for C in cs:
        C = min(C, card["max_ctx"] - 1)
        for B in bs:
            if B * (C + 1) * kv_tok > KV_LIMIT_BYTES:
                continue
            try:
                kv = m.new_kv(B, C + 1)
                tok = torch.randint(0, card["vocab"], (B,), device="cuda", generator=gen)
                fn = lambda: m.decode(tok, C, kv)  # noqa: E731
                eager = wall_median(torch, fn, 2, 5)
                g = capture(torch, fn)
                med, lo, hi = event_median(torch, g.replay, 3, 15)
                del g
                row = {"batch": B, "context": C, "graph_s": med, "graph_min_s": lo, "graph_max_s": hi, "eager_s": eager}
                if (B, C) in ((1, 512), (64, 2048), (256, 512)) and not quick:
                    res["profiles"][f"decode_b{B}_c{C}"] = profile_kernels(torch, fn)
                res["decode"].append(row)
                log(name, "decode", B, C, f"graph {med*1e3:.3f} ms eager {eager*1e3:.3f} ms")
                flush()
                del kv
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"decode B={B} C={C}: {e!r}"[:400])
                log("ERROR", name, "decode", B, C, repr(e)[:200])
            torch.cuda.empty_cache()
    ss = PREFILL_S if not quick else [128, 2048]
    for S in ss:
        if S > card["max_ctx"]:
            continue
        for B in ([1, 4] if S <= PREFILL_B4_MAX_S else [1]):
            try:
                kv = m.new_kv(B, S)
                tok = torch.randint(0, card["vocab"], (B, S), device="cuda", generator=gen)
                fn = lambda: m.prefill(tok, kv)  # noqa: E731
                fn()
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                est = time.perf_counter() - t1
                reps = 10 if est < 0.05 else max(3, min(10, int(0.5 / est)))
                eager = wall_median(torch, fn, 1, reps)
                g = capture(torch, fn, warm=1)
                med, lo, hi = event_median(torch, g.replay, 1, reps)
                del g
                res["prefill"].append({"batch": B, "prompt": S, "graph_s": med, "graph_min_s": lo, "graph_max_s": hi,
                                       "eager_s": eager, "reps": reps})
                if (B, S) in ((1, 128), (1, 2048)) and not quick:
                    res["profiles"][f"prefill_b{B}_s{S}"] = profile_kernels(torch, fn)
                log(name, "prefill", B, S, f"graph {med*1e3:.3f} ms eager {eager*1e3:.3f} ms")
                flush()
                del kv
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"prefill B={B} S={S}: {e!r}"[:400])
                log("ERROR", name, "prefill", B, S, repr(e)[:200])
            torch.cuda.empty_cache()


def section_eager(torch, F, name, quick, res):
    """Eager (host-bound) decode and prefill steps of one dense model, in a process that never
    starts the torch profiler (once started it slows every later eager launch about 2x), with
    the whole distribution of repeats, host thread CPU time per step and a probe of the host's
    cost for one tiny op before every point."""
    card = load_card(name)
    res["model"] = card
    m = Decoder(torch, F, card)
    torch.cuda.synchronize()
    gen = torch.Generator(device="cuda").manual_seed(1)
    tiny = torch.zeros(16, device="cuda")

    def probe():
        for _ in range(50):
            tiny.add_(1.0)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(500):
            tiny.add_(1.0)
        dt = (time.perf_counter() - t) / 500
        torch.cuda.synchronize()
        return dt

    def timed(fn, reps):
        fn()
        fn()
        torch.cuda.synchronize()
        wall, cpu = [], []
        for _ in range(reps):
            t, c = time.perf_counter(), time.thread_time()
            fn()
            torch.cuda.synchronize()
            wall.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
        return wall, cpu

    res["decode"], res["prefill"] = [], []
    reps = 15 if not quick else 3
    for C in ([512, 2048] if not quick else [512]):
        C = min(C, card["max_ctx"] - 1)
        for B in ([1, 8, 64, 256] if not quick else [1]):
            if B * (C + 1) * 2 * card["layers"] * card["hkv"] * card["hd"] * 2 > KV_LIMIT_BYTES:
                continue
            kv = m.new_kv(B, C + 1)
            tok = torch.randint(0, card["vocab"], (B,), device="cuda", generator=gen)
            pr = probe()
            wall, cpu = timed(lambda: m.decode(tok, C, kv), reps)
            res["decode"].append({"batch": B, "context": C, "tiny_op_s": pr, "wall_s": wall, "thread_cpu_s": cpu,
                                  "eager_s": statistics.median(wall)})
            log(name, "eager decode", B, C, f"median {statistics.median(wall)*1e3:.2f} ms min {min(wall)*1e3:.2f} "
                f"cpu {statistics.median(cpu)*1e3:.2f} tiny {pr*1e6:.2f} us")
            del kv
            torch.cuda.empty_cache()
            flush()
    for S in ([64, 128, 512, 2048] if not quick else [128]):
        kv = m.new_kv(1, S)
        tok = torch.randint(0, card["vocab"], (1, S), device="cuda", generator=gen)
        pr = probe()
        wall, cpu = timed(lambda: m.prefill(tok, kv), reps)
        res["prefill"].append({"batch": 1, "prompt": S, "tiny_op_s": pr, "wall_s": wall, "thread_cpu_s": cpu,
                               "eager_s": statistics.median(wall)})
        log(name, "eager prefill", S, f"median {statistics.median(wall)*1e3:.2f} ms min {min(wall)*1e3:.2f} "
            f"cpu {statistics.median(cpu)*1e3:.2f} tiny {pr*1e6:.2f} us")
        del kv
        torch.cuda.empty_cache()
        flush()


# ----------------------------------------------------------------------------------------------
# GEMMs through torch


def gemm_shapes():
    shapes = {}
    for name in DENSE_MODELS:
        c = load_card(name)
        H, q, kv, ffn = c["hidden"], c["hq"] * c["hd"], c["hkv"] * c["hd"], c["ffn"]
        for role, n, k in (("qkv", q + 2 * kv, H), ("o", H, q), ("gate_up", 2 * ffn, H), ("down", H, ffn),
                           ("lm_head", c["vocab"], H)):
            shapes.setdefault((n, k), []).append(f"{name}:{role}")
    return shapes


# MEASURE_FP8_FAST_ACCUM=1: fp8 GEMMs with fast (fp32-free) accumulation, as our calibrator and
# the serving engines' fp8 kernels run them; MEASURE_GEMM_DTYPES=fp8 skips bf16.
FAST_ACCUM = bool(os.environ.get("MEASURE_FP8_FAST_ACCUM"))
GEMM_DTYPES = os.environ.get("MEASURE_GEMM_DTYPES", "bf16,fp8").split(",")


def section_gemm(torch, F, quick, res):
    shapes = gemm_shapes()
    res["fp8_fast_accum"] = FAST_ACCUM
    res["bf16"], res["fp8"], res["notes"] = [], [], []
    res["method"] = ("C[M,N] = A[M,K] W[N,K]^T. bf16: F.linear (cuBLAS). fp8: torch._scaled_mm, e4m3 A and W "
                     "(W column-major), per-tensor fp32 scales, bf16 output. GPU time per call: K calls over rotating "
                     "weight copies (>= 256 MiB) captured in one CUDA graph, median of 10 replays / K")
    ms = GEMM_M if not quick else [1, 64, 4096]
    items = sorted(shapes.items())
    if quick:
        items = items[:3]
    has_fp8 = hasattr(torch, "_scaled_mm")
    for (n, k), roles in items:
        wbytes = n * k * 2
        copies = max(1, min(16, math.ceil(ROTATE_BYTES / wbytes)))
        W = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        W8 = [w.to(torch.float8_e4m3fn) for w in W] if has_fp8 else []
        one = torch.ones((), device="cuda", dtype=torch.float32)
        for M in ms:
            if "lm_head" in roles[0] and M > 4096:
                continue
            try:
                if "bf16" not in GEMM_DTYPES:
                    raise StopIteration
                A = torch.randn(M, k, device="cuda", dtype=torch.bfloat16)
                calls = [(lambda w=w: F.linear(A, w)) for w in W]
                t, kk = graph_time_per_call(torch, calls)
                res["bf16"].append({"m": M, "n": n, "k": k, "roles": roles, "time_s": t, "calls_per_graph": kk})
            except StopIteration:
                pass
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"bf16 {M}x{n}x{k}: {e!r}"[:300])
            if has_fp8 and "fp8" in GEMM_DTYPES:
                A8 = torch.randn(M, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
                Mp = ((M + 15) // 16) * 16
                for Mrun in ([M, Mp] if Mp != M else [M]):
                    try:
                        if Mrun == M:
                            Ax = A8
                        else:
                            Ax = torch.zeros(Mrun, k, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
                            Ax[:M] = A8
                        calls = [(lambda w=w: torch._scaled_mm(Ax, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                               use_fast_accum=FAST_ACCUM)) for w in W8]
                        t, kk = graph_time_per_call(torch, calls)
                        res["fp8"].append({"m": M, "m_run": Mrun, "n": n, "k": k, "roles": roles, "time_s": t,
                                           "calls_per_graph": kk})
                        break
                    except Exception as e:  # noqa: BLE001
                        res.setdefault("errors", []).append(f"fp8 {M}(run {Mrun})x{n}x{k}: {e!r}"[:300])
        flush()
        log("gemm", n, k, roles[0], "done")
        del W, W8
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# attention kernels alone (SDPA)

ATTN_HEADS = [(32, 8, 128), (28, 4, 128), (32, 32, 96), (40, 40, 128), (32, 32, 128)]
# MEASURE_ATTN_HEADS=hq/hkv/d,...: other head layouts (run f). Head dims other than 128 from the
# Hub config.json of models servesim does not validate on: 64/64/96 EleutherAI/gpt-neox-20b
# (hidden 6144, 64 heads), 32/32/80 microsoft/phi-2 (2560, 32 heads), 32/8/64
# meta-llama/Llama-3.2-1B, 16/8/256 google/gemma-2-9b (head_dim 256). Run g: 8/8/d for those
# head dims, a calibrator's sweep rather than a model (few heads, so that batch 1 gives few
# work units, as the head_dim 128 layouts' 4-8 KV heads do).


def attn_heads():
    env = os.environ.get("MEASURE_ATTN_HEADS")
    if not env:
        return ATTN_HEADS
    return [tuple(int(v) for v in item.split("/")) for item in env.split(",")]


def section_attention(torch, F, quick, res):
    res["method"] = ("F.scaled_dot_product_attention (backend chosen by torch), bf16. decode: q [B, hq, 1, d] over "
                     "K/V [B, hkv, C, d] (enable_gqa when hq != hkv), KV rotated over >= 256 MiB; prefill: causal, "
                     "B=1, q=k=v length S. GPU time per call from CUDA-graph replay (see gemm)")
    res["decode"], res["prefill"] = [], []
    heads = attn_heads() if not quick else attn_heads()[:1]
    for hq, hkv, d in heads:
        for B in (DECODE_B if not quick else [1, 64]):
            for C in ([128, 256, 512, 1024, 2048, 4096, 8192, 16384] if not quick else [512]):
                kvb = 2 * B * hkv * C * d * 2
                if kvb > 16e9:
                    continue
                try:
                    copies = max(1, min(64, math.ceil(ROTATE_BYTES / kvb)))
                    q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16)
                    kvs = [(torch.randn(B, hkv, C, d, device="cuda", dtype=torch.bfloat16),
                            torch.randn(B, hkv, C, d, device="cuda", dtype=torch.bfloat16)) for _ in range(copies)]
                    calls = [(lambda kv=kv: F.scaled_dot_product_attention(q, kv[0], kv[1], enable_gqa=hq != hkv))
                             for kv in kvs]
                    t, kk = graph_time_per_call(torch, calls)
                    res["decode"].append({"hq": hq, "hkv": hkv, "head_dim": d, "batch": B, "context": C,
                                          "kv_bytes": kvb, "time_s": t})
                    del kvs
                except Exception as e:  # noqa: BLE001
                    res.setdefault("errors", []).append(f"decode {hq}/{hkv}/{d} B={B} C={C}: {e!r}"[:300])
        for S in (PREFILL_S if not quick else [512]):
            try:
                q = torch.randn(1, hq, S, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(1, hkv, S, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(1, hkv, S, d, device="cuda", dtype=torch.bfloat16)
                calls = [lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hq != hkv)]
                t, kk = graph_time_per_call(torch, calls)
                res["prefill"].append({"hq": hq, "hkv": hkv, "head_dim": d, "batch": 1, "prompt": S, "time_s": t})
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"prefill {hq}/{hkv}/{d} S={S}: {e!r}"[:300])
        torch.cuda.empty_cache()
        log("attention", hq, hkv, d, "done")
        flush()


# ----------------------------------------------------------------------------------------------
# mixture of experts

MOE_SHAPES = {  # name: experts, hidden, expert ffn, top-k (config.json of each model on the Hub)
    "mixtral-8x7b": (8, 4096, 14336, 2),
    "qwen3-30b-a3b": (128, 2048, 768, 8),
    "deepseek-v3": (256, 7168, 2048, 8),
    # More expert shapes (run e), so that a shape held out of the grouped-GEMM fit still has
    # neighbours of its kind (few large experts, many small ones). Hub config.json fields:
    "mixtral-8x22b": (8, 6144, 16384, 2),        # mistralai/Mixtral-8x22B-v0.1
    "dbrx": (16, 6144, 10752, 4),                # databricks/dbrx-base (d_model, ffn_hidden_size)
    "phi-3.5-moe": (16, 4096, 6400, 2),          # microsoft/Phi-3.5-MoE-instruct
    "llama-4-scout": (16, 5120, 8192, 1),        # meta-llama/Llama-4-Scout-17B-16E (routed experts)
    "qwen2-57b-a14b": (64, 3584, 2560, 8),       # Qwen/Qwen2-57B-A14B (moe_intermediate_size)
    "olmoe-1b-7b": (64, 2048, 1024, 8),          # allenai/OLMoE-1B-7B-0924
    "qwen3-235b-a22b": (128, 4096, 1536, 8),     # Qwen/Qwen3-235B-A22B (moe_intermediate_size)
    "gpt-oss-120b": (128, 2880, 2880, 4),        # openai/gpt-oss-120b (bf16 here; it ships MXFP4)
    # One GPU's share of the experts under expert parallelism (the attention-DP rows of issue 38:
    # TensorRT-LLM DEP8/DEP4, SGLang EP32): the same expert shapes with fewer groups per GEMM, so
    # small token counts per expert fill fewer tiles. Top-k kept from the whole model (the block
    # rows route over the local experts only, a stand-in).
    "qwen3-235b-a22b-ep8": (16, 4096, 1536, 8),
    "llama-4-scout-ep4": (4, 5120, 8192, 1),
    "deepseek-v3-ep8": (32, 7168, 2048, 8),
    "deepseek-v3-ep32": (8, 7168, 2048, 8),
    # The same expert shape at 16, 32 and 128 experts per GEMM (with the whole models above): run c
    # and run d left the fp8 down projections of narrow experts (K 768-2048) 14-25% slower than the
    # fitted table, more so with fewer experts at K 1536-2048; these separate K from the group count.
    "qwen3-235b-a22b-ep4": (32, 4096, 1536, 8),
    "qwen3-30b-a3b-ep4": (32, 2048, 768, 8),
    "qwen3-30b-a3b-ep8": (16, 2048, 768, 8),
}
# MEASURE_MOE_SHAPES=a,b: only these shapes (default: the first three, as in run b).
MOE_DEFAULT_SHAPES = ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"]
MOE_DEFAULT_TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def moe_tokens_per_expert():
    """The balanced grouped GEMMs' tokens per expert: MEASURE_MOE_TOKENS=a,b,... (positive integers,
    e.g. counts between the powers of two, where serving steps land and where torch's fp8 grouped
    kernel steps at 256) or the powers of two 1-4096 of runs b-e."""
    env = os.environ.get("MEASURE_MOE_TOKENS", "")
    if not env:
        return list(MOE_DEFAULT_TOKENS)
    out = sorted({int(t) for t in env.split(",") if t.strip()})
    if not out or out[0] < 1:
        raise SystemExit(f"MEASURE_MOE_TOKENS={env!r}: expected positive integers, comma-separated")
    return out


def moe_block(torch, F, x, router, w13, w2, topk, grouped):
    """One MoE FFN: router GEMM, softmax top-k, tokens sorted by expert, grouped gate_up and down
    GEMMs, SiLU*up, weighted scatter back. Device-only ops (capturable in a CUDA graph)."""
    T, H = x.shape
    E = w13.shape[0]
    logits = F.linear(x, router)
    probs = torch.softmax(logits.float(), dim=-1)
    wts, ids = torch.topk(probs, topk, dim=-1)
    wts = (wts / wts.sum(-1, keepdim=True)).to(x.dtype)
    flat = ids.flatten()
    order = torch.argsort(flat, stable=True)
    counts = torch.zeros(E, device=x.device, dtype=torch.int32).scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    src = order // topk
    xs = x.index_select(0, src)
    h = grouped(xs, w13, offs)
    gate, up = h.chunk(2, dim=-1)
    y = grouped(F.silu(gate) * up, w2, offs)
    y = y * wts.flatten().index_select(0, order).unsqueeze(-1)
    return torch.zeros_like(x).index_add_(0, src, y)


def section_moe(torch, F, quick, res):
    res["method"] = ("grouped: torch._grouped_mm(A [sum t_e, K], W [E, K, N], offs), W a transposed view of nn.Linear-style [E, N, K] weights (grouped_s) or stored [E, K, N] (grouped_kn_s), for the experts' gate_up (N = 2 F) "
                     "and down (N = H) projections with every expert given t tokens (balanced) and, for Mixtral, "
                     "a skewed split; loop: one F.linear per expert in one CUDA graph. block: a whole MoE FFN "
                     "(router, top-k, sort, grouped GEMMs, weighted scatter) on T tokens with random routing. "
                     "GPU times from CUDA-graph replay")
    res["grouped"], res["block"] = [], []
    if not hasattr(torch, "_grouped_mm"):
        res["notes"] = "torch._grouped_mm missing: loop only"

    def grouped_mm(a, w, offs):  # w [E, N, K] (row-major like nn.Linear), a [rows, K]
        return torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)

    names = os.environ.get("MEASURE_MOE_SHAPES", ",".join(MOE_DEFAULT_SHAPES)).split(",")
    shapes = {n: MOE_SHAPES[n] for n in names} if not quick else {"mixtral-8x7b": MOE_SHAPES["mixtral-8x7b"]}
    for name, (E, H, Fe, topk) in shapes.items():
        w13 = torch.randn(E, 2 * Fe, H, device="cuda", dtype=torch.bfloat16) * 0.02
        w2 = torch.randn(E, H, Fe, device="cuda", dtype=torch.bfloat16) * 0.02
        # the same weights stored [E, K, N] (row-major per expert), the layout some MoE kernels want
        w_kn = {"gate_up": w13.transpose(-2, -1).contiguous(), "down": w2.transpose(-2, -1).contiguous()}
        tlist = moe_tokens_per_expert() if not quick else [1, 64]
        for t in tlist:
            rows = t * E
            if rows * max(H, 2 * Fe) * 2 > 4e9:
                continue
            for proj, w, kdim, ndim in (("gate_up", w13, H, 2 * Fe), ("down", w2, Fe, H)):
                a = torch.randn(rows, kdim, device="cuda", dtype=torch.bfloat16)
                offs = torch.arange(1, E + 1, device="cuda", dtype=torch.int32) * t
                row = {"model": name, "experts": E, "proj": proj, "n": ndim, "k": kdim, "tokens_per_expert": t,
                       "split": "balanced"}
                try:
                    if hasattr(torch, "_grouped_mm"):
                        row["grouped_s"], _ = graph_time_per_call(torch, [lambda: grouped_mm(a, w, offs)])
                        wkn = w_kn[proj]
                        row["grouped_kn_s"], _ = graph_time_per_call(
                            torch, [lambda: torch._grouped_mm(a, wkn, offs=offs)])
                except Exception as e:  # noqa: BLE001
                    res.setdefault("errors", []).append(f"grouped {name} {proj} t={t}: {e!r}"[:300])
                if E <= 16:
                    try:
                        chunks = a.split(t)
                        row["loop_s"], _ = graph_time_per_call(
                            torch, [lambda: [F.linear(chunks[e], w[e]) for e in range(E)]])
                    except Exception as e:  # noqa: BLE001
                        res.setdefault("errors", []).append(f"loop {name} {proj} t={t}: {e!r}"[:300])
                res["grouped"].append(row)
            if name == "mixtral-8x7b" and t in (8, 64, 512):
                # skewed: expert e gets a share proportional to 1/(e+1), same total
                share = [1.0 / (e + 1) for e in range(E)]
                cnt = [max(1, int(round(rows * s / sum(share)))) for s in share]
                cnt[0] += rows - sum(cnt)
                offs = torch.tensor(list(itertools_accumulate(cnt)), device="cuda", dtype=torch.int32)
                for proj, w, kdim, ndim in (("gate_up", w13, H, 2 * Fe), ("down", w2, Fe, H)):
                    a = torch.randn(rows, kdim, device="cuda", dtype=torch.bfloat16)
                    try:
                        tt, _ = graph_time_per_call(torch, [lambda: grouped_mm(a, w, offs)])
                        res["grouped"].append({"model": name, "experts": E, "proj": proj, "n": ndim, "k": kdim,
                                               "tokens_per_expert": t, "split": "skewed_1_over_e", "counts": cnt,
                                               "grouped_s": tt})
                    except Exception as e:  # noqa: BLE001
                        res.setdefault("errors", []).append(f"skewed {name} {proj} t={t}: {e!r}"[:300])
        log("moe grouped", name, "done")
        flush()
        if os.environ.get("MEASURE_MOE_FP8") == "1":
            w_kn = None  # room for the fp8 copies (DeepSeek-V3's bf16 weights in two layouts are 45 GB)
            section_moe_fp8(torch, res, name, E, tlist, {"gate_up": (w13, H, 2 * Fe), "down": (w2, Fe, H)})
        if hasattr(torch, "_grouped_mm"):
            router = torch.randn(E, H, device="cuda", dtype=torch.bfloat16) * 0.02
            for T in ([1, 4, 16, 64, 256, 1024, 4096, 8192] if not quick else [16]):
                try:
                    x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
                    fn = lambda: moe_block(torch, F, x, router, w13, w2, topk, grouped_mm)  # noqa: E731
                    g = capture(torch, fn)
                    med, lo, hi = event_median(torch, g.replay, 3, 15)
                    del g
                    res["block"].append({"model": name, "experts": E, "hidden": H, "expert_ffn": Fe, "top_k": topk,
                                         "tokens": T, "graph_s": med, "graph_min_s": lo, "graph_max_s": hi})
                    if T in (16, 1024) and name == "mixtral-8x7b" and not quick:
                        res.setdefault("profiles", {})[f"{name}_block_t{T}"] = profile_kernels(torch, fn)
                except Exception as e:  # noqa: BLE001
                    res.setdefault("errors", []).append(f"block {name} T={T}: {e!r}"[:300])
            log("moe block", name, "done")
            flush()
        del w13, w2, w_kn
        torch.cuda.empty_cache()


def section_moe_fp8(torch, res, name, E, tlist, projs):
    """MEASURE_MOE_FP8=1: the same balanced grouped GEMMs in fp8 (torch._scaled_grouped_mm, e4m3 A and
    W, row-wise A scales and per-expert-column W scales, bf16 out, fast accumulation): the kind of
    grouped kernel fp8 MoE serving runs on Hopper. Rows in res["grouped_fp8"], errors kept."""
    if not hasattr(torch, "_scaled_grouped_mm"):
        res.setdefault("errors", []).append("fp8 grouped: torch._scaled_grouped_mm missing")
        return
    res.setdefault("grouped_fp8", [])
    for proj, (w, kdim, ndim) in projs.items():
        w8 = w.to(torch.float8_e4m3fn)  # [E, N, K] row-major; its transpose is the column-major B
        scale_b = torch.ones(E, ndim, device="cuda", dtype=torch.float32)
        for t in tlist:
            rows = t * E
            if rows * max(kdim, ndim) * 2 > 4e9:
                continue
            a8 = torch.randn(rows, kdim, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
            scale_a = torch.ones(rows, device="cuda", dtype=torch.float32)
            offs = torch.arange(1, E + 1, device="cuda", dtype=torch.int32) * t
            row = {"model": name, "experts": E, "proj": proj, "n": ndim, "k": kdim, "tokens_per_expert": t,
                   "split": "balanced"}
            try:
                row["grouped_fp8_s"], _ = graph_time_per_call(torch, [lambda: torch._scaled_grouped_mm(
                    a8, w8.transpose(-2, -1), scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16,
                    use_fast_accum=True)])
                res["grouped_fp8"].append(row)
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"fp8 grouped {name} {proj} t={t}: {e!r}"[:300])
            del a8, scale_a
        del w8
        torch.cuda.empty_cache()
    log("moe grouped fp8", name, "done")
    flush()


def itertools_accumulate(xs):
    s = 0
    for x in xs:
        s += x
        yield s


# ----------------------------------------------------------------------------------------------
# Hugging Face transformers


def hf_model(torch, card_name, attn="sdpa"):
    import transformers
    c = load_card(card_name)
    if card_name.startswith("qwen2"):
        cfg = transformers.Qwen2Config()
    elif card_name.startswith("phi-3"):
        cfg = transformers.Phi3Config()
    elif card_name.startswith("mistral"):
        cfg = transformers.MistralConfig()
    else:
        cfg = transformers.LlamaConfig()
    for k, v in dict(num_hidden_layers=c["layers"], hidden_size=c["hidden"], num_attention_heads=c["hq"],
                     num_key_value_heads=c["hkv"], intermediate_size=c["ffn"], vocab_size=c["vocab"],
                     max_position_embeddings=c["max_ctx"], rope_theta=c["rope_theta"], tie_word_embeddings=False,
                     head_dim=c["hd"]).items():
        setattr(cfg, k, v)
    if hasattr(cfg, "sliding_window"):
        cfg.sliding_window = None
    cfg.pad_token_id = 0
    cfg.eos_token_id = None
    cfg.bos_token_id = None
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16,
                                                                  attn_implementation=attn)
    model.eval()
    return model, c


def section_hf_generate(torch, F, quick, res):
    """generate(): eager HF decode (DynamicCache, SDPA). Per-token times from a streamer."""
    import transformers
    from transformers.generation.streamers import BaseStreamer
    res["transformers"] = transformers.__version__
    res["method"] = ("AutoModelForCausalLM.from_config (random bf16 weights, attn sdpa), generate(greedy, "
                     "min_new_tokens = max_new_tokens, no EOS) on B identical-length random prompts; a streamer "
                     "stamps perf_counter at every put() (the first put is the prompt); ttft = first new token - call start")
    res["runs"] = []

    class Stamps(BaseStreamer):
        def __init__(self):
            self.t = []

        def put(self, value):
            self.t.append(time.perf_counter())

        def end(self):
            pass

    for name in (["llama-3-8b", "qwen2-7b", "phi-3-mini"] if not quick else ["phi-3-mini"]):
        model, c = hf_model(torch, name)
        for B in ([int(x) for x in os.environ.get("MEASURE_HF_BATCHES", "1,8,32,128").split(",")] if not quick else [1]):
            for P in ([512] if not quick else [128]):
                try:
                    N = 24 if not quick else 8
                    ids = torch.randint(10, c["vocab"], (B, P), device="cuda")
                    kw = dict(max_new_tokens=N, min_new_tokens=N, do_sample=False, pad_token_id=0)
                    model.generate(ids, **dict(kw, max_new_tokens=4, min_new_tokens=4))  # warm-up
                    torch.cuda.synchronize()
                    st = Stamps()
                    t0 = time.perf_counter()
                    out = model.generate(ids, streamer=st, **kw)
                    torch.cuda.synchronize()
                    t1 = time.perf_counter()
                    new = out.shape[1] - P
                    stamps = [s - t0 for s in st.t[1:]]
                    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
                    res["runs"].append({"model": name, "batch": B, "prompt": P, "new_tokens": new, "total_s": t1 - t0,
                                        "ttft_s": stamps[0] if stamps else None,
                                        "tpot_median_s": statistics.median(gaps) if gaps else None,
                                        "token_times_s": stamps})
                    flush()
                    log("hf generate", name, B, P, f"ttft {stamps[0]*1e3:.1f} ms tpot {statistics.median(gaps)*1e3:.2f} ms")
                except Exception as e:  # noqa: BLE001
                    res.setdefault("errors", []).append(f"generate {name} B={B}: {e!r}"[:400])
                    log("ERROR generate", name, B, repr(e)[:300])
                torch.cuda.empty_cache()
        if os.environ.get("MEASURE_NO_PROFILE"):
            del model
            torch.cuda.empty_cache()
            continue
        try:  # kernels of one eager decode forward (DynamicCache after a 512-token prompt)
            ids = torch.randint(10, c["vocab"], (1, 512), device="cuda")
            with torch.no_grad():
                o = model(ids, use_cache=True)
                pkv = o.past_key_values
                nxt = ids[:, -1:]
                res.setdefault("profiles", {})[f"{name}_decode_b1"] = profile_kernels(
                    torch, lambda: model(nxt, past_key_values=pkv, use_cache=True))
        except Exception as e:  # noqa: BLE001
            res.setdefault("errors", []).append(f"profile {name}: {e!r}"[:300])
        del model
        torch.cuda.empty_cache()


def section_hf_cb(torch, F, quick, res):
    """generate_batch(): transformers' continuous batching (paged cache, its own scheduler), all
    requests submitted at once; per-token timestamps where this transformers version records them."""
    import inspect
    import random
    import logging
    import transformers
    from transformers import GenerationConfig
    res["transformers"] = transformers.__version__
    logging.getLogger("ContinuousBatchingLogger").setLevel(logging.INFO)
    res["runs"] = []
    for name in (os.environ.get("MEASURE_CB_MODELS", "llama-3-8b,qwen2-7b").split(",") if not quick else ["phi-3-mini"]):
        model = None
        for attn in ("sdpa_paged", "paged|sdpa", "sdpa"):
            try:
                model, c = hf_model(torch, name, attn=attn)
                res.setdefault("attn_implementation", {})[name] = attn
                break
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"from_config {name} attn={attn}: {e!r}"[:300])
        if model is None:
            continue
        sig = inspect.signature(model.generate_batch)
        res.setdefault("generate_batch_params", list(sig.parameters))
        rng = random.Random(7)
        warmed = False
        for R in ([int(x) for x in os.environ.get("MEASURE_CB_REQUESTS", "8,32,128").split(",")] if not quick else [4]):
            N = 64 if not quick else 8
            if os.environ.get("MEASURE_CB_SEED_PER_R"):  # the same R gives the same prompts (repeats)
                rng = random.Random(1000 + R)
            prompts = [rng.randint(128, 1024) for _ in range(R)]
            inputs = [[rng.randint(10, c["vocab"] - 1) for _ in range(p)] for p in prompts]
            gc_ = GenerationConfig(max_new_tokens=N, min_new_tokens=N, do_sample=False, eos_token_id=None,
                                   pad_token_id=0)
            kw = {}
            if "record_timestamps" in sig.parameters:
                kw["record_timestamps"] = True
            if "progress_bar" in sig.parameters:
                kw["progress_bar"] = False
            try:
                if not warmed:  # warm-up before the model's first measured call (graphs, compile, allocator)
                    model.generate_batch(inputs=inputs[:4], generation_config=gc_, **kw)
                    warmed = True
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = model.generate_batch(inputs=inputs, generation_config=gc_, **kw)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                reqs = []
                for rid, o in (out.items() if isinstance(out, dict) else enumerate(out)):
                    d = {"id": str(rid), "prompt": len(getattr(o, "prompt_ids", []) or []),
                         "generated": len(getattr(o, "generated_tokens", []) or []),
                         "created_s": getattr(o, "created_time", t0) - t0}
                    ls = getattr(o, "lifespan", None)
                    if ls:
                        d["start_s"], d["end_s"] = ls[0] - t0, ls[1] - t0
                    ts = getattr(o, "timestamps", None)
                    if ts:
                        d["token_times_s"] = [x - t0 for x in ts]
                    reqs.append(d)
                run = {"model": name, "requests": R, "new_tokens": N, "prompts": prompts, "wall_s": t1 - t0,
                       "per_request": reqs}
                ttft = [r["token_times_s"][0] for r in reqs if r.get("token_times_s")]
                e2e = [r["end_s"] for r in reqs if "end_s" in r]
                if ttft:
                    run["ttft_p50_s"] = statistics.median(ttft)
                    tp = [(r["token_times_s"][-1] - r["token_times_s"][0]) / (len(r["token_times_s"]) - 1)
                          for r in reqs if r.get("token_times_s") and len(r["token_times_s"]) > 1]
                    run["tpot_p50_s"] = statistics.median(tp) if tp else None
                if e2e:
                    run["e2e_p50_s"] = statistics.median(e2e)
                res["runs"].append(run)
                flush()
                log("hf cb", name, R, f"wall {t1-t0:.2f} s", {k: run.get(k) for k in ("ttft_p50_s", "tpot_p50_s", "e2e_p50_s")})
            except Exception as e:  # noqa: BLE001
                res.setdefault("errors", []).append(f"generate_batch {name} R={R}: {traceback.format_exc()[-600:]}")
                log("ERROR cb", name, R, repr(e)[:300])
            torch.cuda.empty_cache()
        try:
            from transformers.generation.configuration_utils import ContinuousBatchingConfig
            res["cb_config_defaults"] = {k: repr(v)[:200] for k, v in vars(ContinuousBatchingConfig()).items()}
        except Exception as e:  # noqa: BLE001
            res["cb_config_defaults"] = repr(e)[:200]
        for attr, val in list(vars(model).items()):
            if any(w in type(val).__name__ for w in ("Continuous", "Manager", "Processor")):
                res.setdefault("cb_objects", {})[f"{name}.{attr}"] = {
                    k: repr(v)[:200] for k, v in vars(val).items() if isinstance(v, (int, float, str, bool, tuple))}
        del model
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# driver

SECTIONS = {  # name -> (function, time limit s)
    "gemm": (section_gemm, 150),
    "gemm_fp8_fast": (section_gemm, 150),  # run with MEASURE_FP8_FAST_ACCUM=1 MEASURE_GEMM_DTYPES=fp8
    "attention": (section_attention, 90),
    "moe": (section_moe, 240),
    "hf_generate": (section_hf_generate, 200),
    "hf_cb": (section_hf_cb, 300),
}
for _m in DENSE_MODELS:
    SECTIONS["model_" + _m] = (None, 150)
    SECTIONS["eager_" + _m] = (None, 60)


def env_info(torch):
    info = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "torch": torch.__version__, "cuda": torch.version.cuda}
    p = torch.cuda.get_device_properties(0)
    info["gpu"] = {"name": p.name, "sm_count": p.multi_processor_count, "memory_bytes": p.total_memory,
                   "cc": f"{p.major}.{p.minor}"}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit,memory.total",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi"] = repr(e)
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        pass
    return info


def run_section(name, out, quick, command):
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {"schema": "servesim-independent/1", "section": name, "command": command, "quick": quick}
    res.update(env_info(torch))
    t = time.time()

    def write():
        tmp = os.path.join(out, name + ".json.tmp")
        with open(tmp, "w") as f:
            json.dump(res, f, indent=None, separators=(",", ":"))
        os.replace(tmp, os.path.join(out, name + ".json"))
    _FLUSH[0] = write
    try:
        # transformers' continuous batching runs its loop in another thread, where tensors made
        # under inference_mode cannot be updated: the hf sections run under no_grad only.
        ctx = torch.no_grad() if name.startswith("hf_") else torch.inference_mode()
        with ctx:
            if name.startswith("model_"):
                section_model(torch, F, name[len("model_"):], quick, res)
            elif name.startswith("eager_"):
                section_eager(torch, F, name[len("eager_"):], quick, res)
            else:
                SECTIONS[name][0](torch, F, quick, res)
    except Exception:  # noqa: BLE001
        res.setdefault("errors", []).append(traceback.format_exc()[-1500:])
        log("SECTION ERROR", name, traceback.format_exc()[-800:])
    res["section_s"] = time.time() - t
    write()
    log("wrote", name, f"{res['section_s']:.1f} s", "errors:", len(res.get("errors", [])))


def merge_parts(parts, out_file):
    """One JSON of every section finished so far (the device returns few files)."""
    allres = {"schema": "servesim-independent/1", "sections": {}}
    for f in sorted(os.listdir(parts)):
        if f.endswith(".json"):
            with open(os.path.join(parts, f)) as fh:
                allres["sections"][f[:-5]] = json.load(fh)
    tmp = out_file + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(allres, fh, indent=None, separators=(",", ":"))
    os.replace(tmp, out_file)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for results.json (every section merged)")
    ap.add_argument("--parts", help="directory for the per-section files (default OUT/parts)")
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--quick", default="", help="comma list of sections to run in quick (smoke) mode, or 'all'")
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting sections past this wall time")
    ap.add_argument("--section", help=argparse.SUPPRESS)  # child mode
    ap.add_argument("--command", default=None)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    parts = a.parts or os.path.join(a.out, "parts")
    os.makedirs(parts, exist_ok=True)
    # recorded with the output folders as names, not this machine's paths
    argv = " ".join(sys.argv[1:]).replace(a.out, "$OUT").replace(a.parts or "\0", "$PARTS")
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("MEASURE_"))
    command = a.command or (env + " " if env else "") + "python3 calibrate/independent/measure.py " + argv
    quick = set(a.quick.split(",")) if a.quick else set()
    if a.section:
        run_section(a.section, parts, a.section in quick or "all" in quick, command)
        return
    status = {}
    for name in a.sections.split(","):
        if name not in SECTIONS:
            sys.exit(f"measure.py: unknown section '{name}' (have: {', '.join(SECTIONS)})")
    section_limit_s = None
    if "MEASURE_SECTION_LIMIT_S" in os.environ:
        raw = os.environ["MEASURE_SECTION_LIMIT_S"]
        try:
            section_limit_s = float(raw)
        except ValueError:
            section_limit_s = float("nan")
        if not section_limit_s > 0:
            print(f"measure.py: MEASURE_SECTION_LIMIT_S: expected seconds > 0, got '{raw}'", file=sys.stderr)
            sys.exit(2)
    for name in a.sections.split(","):
        q = name in quick or "all" in quick
        left = a.budget_s - (time.time() - T0)
        # MEASURE_SECTION_LIMIT_S: one section's own time limit instead of its default (run i's
        # hf_cb series outgrew the default 300 s); the budget still caps it.
        own = section_limit_s if section_limit_s is not None else SECTIONS[name][1]
        limit = min(own * (0.4 if q else 1.0), left)
        if limit < 20:
            status[name] = "skipped: budget spent"
            continue
        t = time.time()
        args = [sys.executable, os.path.abspath(__file__), "--out", a.out, "--parts", parts, "--section", name,
                "--command", command, "--quick", a.quick]
        try:
            rc = subprocess.run(args, timeout=limit).returncode
            status[name] = f"rc={rc} {time.time() - t:.0f}s" + (" (quick)" if q else "")
        except subprocess.TimeoutExpired:
            status[name] = f"TIMEOUT after {limit:.0f}s (partial results kept)"
        merge_parts(parts, os.path.join(a.out, "results.json"))
        log("section", name, status[name])
    print(json.dumps(status, indent=1))


if __name__ == "__main__":
    main()
