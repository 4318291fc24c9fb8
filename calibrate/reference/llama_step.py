#!/usr/bin/env python3
"""End-to-end reference timings of a Llama-3-8B-shaped decoder in plain PyTorch (random bf16
weights, no Hugging Face), for validating servesim's predictions against a real GPU.

Times (a) decode steps with a KV cache of C tokens per sequence, replayed from a CUDA graph (and
a few eagerly), and (b) eager prefill of B prompts of S tokens. Writes reference_steps.json
(schema servesim-reference-steps/1). Run by calibrate/run_all.sh; torch + stdlib only.
"""
import argparse
import datetime
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# Llama-3-8B
LAYERS, HIDDEN, HQ, HKV, HD, FFN, VOCAB = 32, 4096, 32, 8, 128, 14336, 128256
ROPE_THETA, EPS = 500000.0, 1e-5
KV_BYTES_PER_TOKEN = LAYERS * 2 * HKV * HD * 2  # 131072
KV_LIMIT_BYTES = 70e9

DECODE_B = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DECODE_C = [512, 1024, 2048, 4096, 8192]
EAGER_B, EAGER_C = [1, 16, 64], 1024
PREFILL_B = [1, 2, 4, 8]
PREFILL_S = [128, 512, 1024, 2048, 4096, 8192]
PREFILL_MAX_TOKENS = 32768
ATTN_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]


def rmsnorm(x, w):
    # HF LlamaRMSNorm: fp32 statistics, cast back, then weight.
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    return w * xf.to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Llama:
    def __init__(self, device="cuda"):
        dt = torch.bfloat16
        g = torch.Generator(device=device).manual_seed(0)

        def w(*shape, scale=0.02):
            return torch.randn(*shape, device=device, dtype=dt, generator=g) * scale

        self.embed = w(VOCAB, HIDDEN, scale=1.0)
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append({
                "ln1": 1.0 + w(HIDDEN, scale=0.1), "wqkv": w((HQ + 2 * HKV) * HD, HIDDEN),
                "wo": w(HIDDEN, HQ * HD), "ln2": 1.0 + w(HIDDEN, scale=0.1),
                "wgu": w(2 * FFN, HIDDEN), "wd": w(HIDDEN, FFN),
            })
        self.norm = 1.0 + w(HIDDEN, scale=0.1)
        self.lm_head = w(VOCAB, HIDDEN)  # untied
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, HD, 2, device=device, dtype=torch.float32) / HD))
        pos = torch.arange(0, 16384, device=device, dtype=torch.float32)
        freqs = torch.outer(pos, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos().to(dt), emb.sin().to(dt)

    def _mlp(self, x, L):
        h = rmsnorm(x, L["ln2"])
        gate, up = F.linear(h, L["wgu"]).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, L["wd"])

    def decode(self, tokens, pos, kv, ctx):
        """One decode step: tokens [B], KV cache kv [LAYERS, 2, B, HKV, ctx+1, HD] holding ctx
        earlier tokens; writes the new K/V at index ctx and attends over ctx+1 tokens."""
        B = tokens.shape[0]
        x = F.embedding(tokens, self.embed)                       # [B, H]
        cos, sin = self.cos[pos].unsqueeze(1), self.sin[pos].unsqueeze(1)  # [B, 1, HD]
        for li, L in enumerate(self.layers):
            h = rmsnorm(x, L["ln1"])
            qkv = F.linear(h, L["wqkv"])
            q, k, v = qkv.split([HQ * HD, HKV * HD, HKV * HD], dim=-1)
            q, k, v = q.view(B, HQ, HD), k.view(B, HKV, HD), v.view(B, HKV, HD)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            kv[li, 0, :, :, ctx] = k
            kv[li, 1, :, :, ctx] = v
            # Grouped-query decode without repeat_kv: the 4 query heads of a kv head become 4
            # "query positions" of that head (exact for decode, which has no causal mask).
            qg = q.view(B, HKV, HQ // HKV, HD)
            with sdpa_kernel(ATTN_BACKENDS):
                o = F.scaled_dot_product_attention(qg, kv[li, 0], kv[li, 1])
            x = x + F.linear(o.reshape(B, HQ * HD), L["wo"])
            x = self._mlp(x, L)
        return F.linear(rmsnorm(x, self.norm), self.lm_head)      # [B, VOCAB]

    def prefill(self, tokens, kv, gqa_mode):
        """Prompt pass: tokens [B, S]; fills kv [LAYERS, 2, B, HKV, S, HD]; logits of the last
        position only (what a server samples from)."""
        B, S = tokens.shape
        x = F.embedding(tokens, self.embed)                       # [B, S, H]
        cos, sin = self.cos[:S], self.sin[:S]                     # [S, HD]
        for li, L in enumerate(self.layers):
            h = rmsnorm(x, L["ln1"])
            q, k, v = F.linear(h, L["wqkv"]).split([HQ * HD, HKV * HD, HKV * HD], dim=-1)
            q = q.view(B, S, HQ, HD).transpose(1, 2)
            k = k.view(B, S, HKV, HD).transpose(1, 2)
            v = v.view(B, S, HKV, HD).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            kv[li, 0].copy_(k)
            kv[li, 1].copy_(v)
            with sdpa_kernel(ATTN_BACKENDS):
                if gqa_mode == "enable_gqa":
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                else:
                    o = F.scaled_dot_product_attention(q, k.repeat_interleave(HQ // HKV, 1),
                                                       v.repeat_interleave(HQ // HKV, 1), is_causal=True)
            x = x + F.linear(o.transpose(1, 2).reshape(B, S, HQ * HD), L["wo"])
            x = self._mlp(x, L)
        return F.linear(rmsnorm(x[:, -1], self.norm), self.lm_head)


def event_time(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)


def check_decode_attention():
    """The grouped-query trick in decode() must equal repeat_kv attention."""
    B, C = 2, 300
    q = torch.randn(B, HQ, HD, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, HKV, C, HD, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, HKV, C, HD, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel(ATTN_BACKENDS):
        o = F.scaled_dot_product_attention(q.view(B, HKV, HQ // HKV, HD), k, v).reshape(B, HQ, HD)
    ref = F.scaled_dot_product_attention(q.float().unsqueeze(2), k.float().repeat_interleave(HQ // HKV, 1),
                                         v.float().repeat_interleave(HQ // HKV, 1)).squeeze(2)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    print(f"check grouped decode attention vs repeat_kv fp32: rel_err {err:.2e} {'PASS' if err < 1e-2 else 'FAIL'}")


def pick_gqa_mode():
    q = torch.randn(1, HQ, 256, HD, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, HKV, 256, HD, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel(ATTN_BACKENDS):
            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        return "enable_gqa"
    except (RuntimeError, TypeError):
        return "repeat_kv"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="a few points only (smoke test)")
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("llama_step.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.cuda.get_device_properties(0)
    t0 = time.time()
    model = Llama()
    torch.cuda.synchronize()
    print(f"model built in {time.time() - t0:.1f} s, "
          f"{torch.cuda.memory_allocated() / 1e9:.1f} GB allocated", flush=True)
    check_decode_attention()
    gqa_mode = pick_gqa_mode()
    print(f"prefill GQA mode: {gqa_mode}")

    decode_b, decode_c = (DECODE_B, DECODE_C) if not args.quick else ([1, 64], [512, 4096])
    prefill_b, prefill_s = (PREFILL_B, PREFILL_S) if not args.quick else ([1, 4], [128, 2048])
    decode, prefill = [], []
    gen = torch.Generator(device="cuda").manual_seed(1)

    def run_decode(B, C, mode):
        kv_bytes = B * C * KV_BYTES_PER_TOKEN
        if kv_bytes > KV_LIMIT_BYTES:
            print(f"decode B={B} C={C}: skipped, KV {kv_bytes / 1e9:.1f} GB > {KV_LIMIT_BYTES / 1e9:.0f} GB")
            return
        kv = torch.empty(LAYERS, 2, B, HKV, C + 1, HD, device="cuda", dtype=torch.bfloat16)
        kv.normal_(generator=gen)
        tokens = torch.randint(0, VOCAB, (B,), device="cuda", generator=gen)
        pos = torch.full((B,), C, device="cuda", dtype=torch.long)
        if mode == "cudagraph":
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model.decode(tokens, pos, kv, C)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                model.decode(tokens, pos, kv, C)
            t = event_time(graph.replay, warmup=3, reps=25)
            del graph
        else:
            t = event_time(lambda: model.decode(tokens, pos, kv, C), warmup=3, reps=20)
        decode.append({"batch": B, "context": C, "mode": mode, "time_s": t})
        print(f"decode {mode:9s} B={B:4d} C={C:5d}: {t * 1e3:8.3f} ms", flush=True)
        del kv
        torch.cuda.empty_cache()

    with torch.inference_mode():
        for C in decode_c:
            for B in decode_b:
                run_decode(B, C, "cudagraph")
        for B in (EAGER_B if not args.quick else [1]):
            run_decode(B, EAGER_C, "eager")
        for S in prefill_s:
            for B in prefill_b:
                if B * S > PREFILL_MAX_TOKENS:
                    continue
                kv = torch.empty(LAYERS, 2, B, HKV, S, HD, device="cuda", dtype=torch.bfloat16)
                tokens = torch.randint(0, VOCAB, (B, S), device="cuda", generator=gen)
                fn = lambda: model.prefill(tokens, kv, gqa_mode)  # noqa: E731
                fn()
                torch.cuda.synchronize()
                t1 = time.time()
                fn()
                torch.cuda.synchronize()
                est = time.time() - t1
                # >= 20 repeats for short steps; long prompts (up to ~1 s) fewer, to fit the budget.
                reps = 20 if est < 0.03 else max(5, min(20, math.ceil(0.6 / est)))
                t = event_time(fn, warmup=1, reps=reps)
                prefill.append({"batch": B, "prompt": S, "time_s": t})
                print(f"prefill B={B} S={S:5d}: {t * 1e3:9.2f} ms ({reps} reps)", flush=True)
                del kv
                torch.cuda.empty_cache()

    doc = {
        "schema": "servesim-reference-steps/1",
        "model": "llama-3-8b",
        "dtype": "bf16",
        "gpu": {"name": dev.name, "compute_capability": f"{dev.major}.{dev.minor}",
                "sm_count": dev.multi_processor_count, "memory_bytes": dev.total_memory},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": args.command,
        "torch": torch.__version__,
        "decode": decode,
        "prefill": prefill,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out} in {time.time() - t0:.0f} s total")


if __name__ == "__main__":
    main()
