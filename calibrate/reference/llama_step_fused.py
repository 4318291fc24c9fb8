#!/usr/bin/env python3
"""End-to-end reference timings of a Llama-3-8B-shaped decoder built from the calibrated kernels
(random bf16 weights, no Hugging Face): the same model as llama_step.py, but with the kernel set a
serving engine runs and servesim models, so that servesim's composition (op list + per-kernel
tables from raw.json) can be checked against the whole model on the real GPU.

Per layer: RMSNorm (k_rmsnorm), fused QKV GEMM (F.linear -> cuBLAS), NeoX RoPE in place on the
QKV output (k_rope), KV-cache write into the paged cache [num_blocks, kv_heads, 16, 128]
(k_reshape_and_cache), attention (decode: k_paged_decode + k_decode_reduce over a random block
table; prefill: SDPA flash, causal, enable_gqa), O GEMM, residual add (k_add), RMSNorm, fused
gate_up GEMM, SiLU*mul (k_silu_mul), down GEMM, residual add. Then the final RMSNorm over all
tokens, the LM head on the sampled rows only (every row in decode, the last token of each
sequence in prefill) and argmax sampling. The custom kernels are calibrate/src/kernels.cuh, the
same source the microbenchmarks time, built by torch.utils.cpp_extension from fused_ops.cu.

Both decode and prefill steps are captured in a CUDA graph and replayed (events around each
replay, median). Writes reference_steps_fused.json (schema servesim-reference-steps/1).
"""
import argparse
import copy
import ctypes
import datetime
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_step as plain  # noqa: E402  (same weights, constants and the correctness reference)

LAYERS, HIDDEN, HQ, HKV, HD, FFN, VOCAB = (plain.LAYERS, plain.HIDDEN, plain.HQ, plain.HKV, plain.HD, plain.FFN,
                                           plain.VOCAB)
EPS = plain.EPS
QKV = (HQ + 2 * HKV) * HD
BLOCK = 16  # KV block size (vLLM's default)
KV_BYTES_PER_TOKEN = plain.KV_BYTES_PER_TOKEN  # 131072
KV_LIMIT_BYTES = 70e9

DECODE_B = [1, 2, 4, 8, 16, 32, 64, 128, 256]
DECODE_C = [512, 1024, 2048, 4096, 8191]  # C cached tokens + 1 new <= 8192
PREFILL_B = [1, 2, 4, 8]
PREFILL_S = [128, 512, 1024, 2048, 4096, 8192]
PREFILL_MAX_TOKENS = 32768


# ---------------------------------------------------------------------------- extension
class Ops:
    """ctypes binding of fused_ops.cu; every call launches on torch's current stream."""

    def __init__(self, build_dir=None, verbose=False):
        from torch.utils.cpp_extension import load
        maj, mnr = torch.cuda.get_device_capability()
        arch = f"{maj}{mnr}"
        src = os.path.join(HERE, "fused_ops.cu")
        t0 = time.time()
        kw = {}
        if build_dir:
            os.makedirs(build_dir, exist_ok=True)
            kw["build_directory"] = build_dir
        ret = load(name="servesim_fused_ops", sources=[src],
                   extra_cuda_cflags=[f"-gencode=arch=compute_{arch},code=sm_{arch}", "-O3"],
                   extra_include_paths=[os.path.join(HERE, "..", "src")],
                   is_python_module=False, verbose=verbose, **kw)
        path = ret if isinstance(ret, str) else None
        if path is None:
            from torch.utils.cpp_extension import _get_build_directory
            path = os.path.join(build_dir or _get_build_directory("servesim_fused_ops", verbose), "servesim_fused_ops.so")
        self.build_s = time.time() - t0
        self.path = path
        L = ctypes.CDLL(path)
        P, I, LL, Fl = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_float
        sig = {
            "fo_rmsnorm": [P, P, P, I, I, Fl, P],
            "fo_add": [P, P, P, LL, P],
            "fo_silu_mul": [P, P, I, I, P],
            "fo_rope": [P, P, LL, LL, P, P, I, I, I, I, P],
            "fo_kv_write": [P, P, LL, LL, P, P, P, I, I, I, I, P],
            "fo_paged_decode": [P, LL, P, P, P, I, P, I, I, I, I, I, I, I, P, P, P, P, P],
            "fo_choose_part": [I, I, I],
            "fo_sm_count": [],
            "fo_error_string": [I],
        }
        for name, args in sig.items():
            f = getattr(L, name)
            f.argtypes = args
            f.restype = ctypes.c_char_p if name == "fo_error_string" else ctypes.c_int
        self.L = L

    def _ok(self, rc, what):
        if rc != 0:
            msg = "unsupported shape" if rc == -1 else self.L.fo_error_string(rc).decode()
            raise RuntimeError(f"{what}: {msg}")

    @staticmethod
    def _s():
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    @staticmethod
    def _row_stride(t, what):
        assert t.dtype == torch.bfloat16 and t.stride(-1) == 1 and t.data_ptr() % 16 == 0, what
        return t.stride(0)

    def rmsnorm(self, x, w):
        assert x.is_contiguous() and x.dim() == 2
        y = torch.empty_like(x)
        self._ok(self.L.fo_rmsnorm(x.data_ptr(), w.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1], EPS, self._s()),
                 "rmsnorm")
        return y

    def add(self, a, b):
        assert a.is_contiguous() and b.is_contiguous() and a.shape == b.shape
        o = torch.empty_like(a)
        self._ok(self.L.fo_add(a.data_ptr(), b.data_ptr(), o.data_ptr(), a.numel(), self._s()), "add")
        return o

    def silu_mul(self, gu):
        assert gu.is_contiguous()
        T, H2 = gu.shape
        out = torch.empty(T, H2 // 2, device=gu.device, dtype=gu.dtype)
        self._ok(self.L.fo_silu_mul(gu.data_ptr(), out.data_ptr(), T, H2 // 2, self._s()), "silu_mul")
        return out

    def rope_(self, q, k, cos_sin, pos):
        """q [T, HQ*HD], k [T, HKV*HD] (row-strided views allowed), rotated in place."""
        T = q.shape[0]
        self._ok(self.L.fo_rope(q.data_ptr(), k.data_ptr(), self._row_stride(q, "q"), self._row_stride(k, "k"),
                                cos_sin.data_ptr(), pos.data_ptr(), T, HQ, HKV, HD, self._s()), "rope")

    def kv_write(self, k, v, kc, vc, slots):
        T = k.shape[0]
        self._ok(self.L.fo_kv_write(k.data_ptr(), v.data_ptr(), self._row_stride(k, "k"), self._row_stride(v, "v"),
                                    kc.data_ptr(), vc.data_ptr(), slots.data_ptr(), T, HKV, kc.shape[2], HD,
                                    self._s()), "kv_write")

    def choose_part(self, B, max_ctx):
        return self.L.fo_choose_part(B, HKV, max_ctx)

    def paged_decode(self, q, kc, vc, block_table, seq_lens, max_ctx, part, ws):
        B = q.shape[0]
        max_parts = (max_ctx + part - 1) // part
        m, l, o = ws
        assert m.numel() >= B * HQ * max_parts and o.numel() >= B * HQ * max_parts * HD
        assert block_table.is_contiguous() and block_table.dtype == torch.int32
        out = torch.empty(B, HQ * HD, device=q.device, dtype=q.dtype)
        self._ok(self.L.fo_paged_decode(q.data_ptr(), self._row_stride(q, "q"), kc.data_ptr(), vc.data_ptr(),
                                        block_table.data_ptr(), block_table.shape[1], seq_lens.data_ptr(), B, HQ, HKV,
                                        kc.shape[2], HD, max_parts, part, out.data_ptr(), m.data_ptr(), l.data_ptr(),
                                        o.data_ptr(), self._s()), "paged_decode")
        return out


# ---------------------------------------------------------------------------- model
class FusedLlama:
    """Runs the plain model's weights (llama_step.Llama) through the calibrated kernels."""

    def __init__(self, model, ops, prefill_attn):
        self.m, self.ops, self.prefill_attn = model, ops, prefill_attn
        half = HD // 2
        # [max_pos, HD] = [cos(f) | sin(f)], the layout k_rope reads (plain model: cat(f, f)).
        self.cos_sin = torch.cat([model.cos[:, :half], model.sin[:, :half]], dim=-1).contiguous()

    def _layer_tail(self, x, attn_out, L):
        ops = self.ops
        x = ops.add(x, F.linear(attn_out, L["wo"]))
        h = ops.rmsnorm(x, L["ln2"])
        a = ops.silu_mul(F.linear(h, L["wgu"]))
        return ops.add(x, F.linear(a, L["wd"]))

    def _head(self, x, rows=None):
        h = self.ops.rmsnorm(x, self.m.norm)                      # final norm over all tokens
        if rows is not None:
            h = h.index_select(0, rows)                           # the sampled rows only
        logits = F.linear(h, self.m.lm_head)
        return logits, torch.argmax(logits, dim=-1)

    def decode(self, st):
        """st: tokens [B] long, pos [B] int32 (= cached tokens), slots [B] int32, block_table
        [B, nb] int32, seq_lens [B] int32 (= pos + 1), kc / vc [LAYERS, blocks, HKV, BLOCK, HD],
        max_ctx, part, ws (split-K workspace)."""
        ops = self.ops
        x = F.embedding(st["tokens"], self.m.embed)               # [B, H]
        for li, L in enumerate(self.m.layers):
            h = ops.rmsnorm(x, L["ln1"])
            qkv = F.linear(h, L["wqkv"])                          # [B, QKV]
            q, k, v = qkv[:, :HQ * HD], qkv[:, HQ * HD:(HQ + HKV) * HD], qkv[:, (HQ + HKV) * HD:]
            ops.rope_(q, k, self.cos_sin, st["pos"])
            ops.kv_write(k, v, st["kc"][li], st["vc"][li], st["slots"])
            o = ops.paged_decode(q, st["kc"][li], st["vc"][li], st["block_table"], st["seq_lens"], st["max_ctx"],
                                 st["part"], st["ws"])
            x = self._layer_tail(x, o, L)
        return self._head(x)

    def prefill(self, st):
        """st: tokens [B, S] long, pos [B*S] int32, slots [B*S] int32, last [B] long (row of each
        sequence's last token), kc / vc as in decode."""
        ops = self.ops
        B, S = st["tokens"].shape
        T = B * S
        x = F.embedding(st["tokens"].reshape(T), self.m.embed)    # [T, H]
        for li, L in enumerate(self.m.layers):
            h = ops.rmsnorm(x, L["ln1"])
            qkv = F.linear(h, L["wqkv"])                          # [T, QKV]
            q, k, v = qkv[:, :HQ * HD], qkv[:, HQ * HD:(HQ + HKV) * HD], qkv[:, (HQ + HKV) * HD:]
            ops.rope_(q, k, self.cos_sin, st["pos"])
            ops.kv_write(k, v, st["kc"][li], st["vc"][li], st["slots"])
            q4 = q.view(B, S, HQ, HD).transpose(1, 2)
            k4 = k.view(B, S, HKV, HD).transpose(1, 2)
            v4 = v.view(B, S, HKV, HD).transpose(1, 2)
            o = self.prefill_attn(q4, k4, v4)                     # [B, HQ, S, HD]
            o = o.transpose(1, 2).reshape(T, HQ * HD)
            x = self._layer_tail(x, o, L)
        return self._head(x, st["last"])


def pick_prefill_attn():
    """SDPA flash with native GQA if it runs here; else flash+efficient; else repeat_kv."""
    # Strided views of a fused QKV buffer, as prefill() passes them.
    qkv = torch.randn(256, QKV, device="cuda", dtype=torch.bfloat16)
    q = qkv[:, :HQ * HD].view(1, 256, HQ, HD).transpose(1, 2)
    k = qkv[:, HQ * HD:(HQ + HKV) * HD].view(1, 256, HKV, HD).transpose(1, 2)
    for name, backends in (("flash+enable_gqa", [SDPBackend.FLASH_ATTENTION]),
                           ("flash/efficient+enable_gqa", [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])):
        try:
            with sdpa_kernel(backends):
                F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)

            def attn(q4, k4, v4, backends=backends):
                with sdpa_kernel(backends):
                    return F.scaled_dot_product_attention(q4, k4, v4, is_causal=True, enable_gqa=True)
            return name, attn
        except (RuntimeError, TypeError) as e:
            print(f"prefill attention {name} unavailable: {str(e).splitlines()[0]}")

    def attn_rep(q4, k4, v4):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            return F.scaled_dot_product_attention(q4, k4.repeat_interleave(HQ // HKV, 1),
                                                  v4.repeat_interleave(HQ // HKV, 1), is_causal=True)
    return "flash/efficient+repeat_kv", attn_rep


# ---------------------------------------------------------------------------- state builders
def paged_state(B, ctx_tokens, gen, fill):
    """A paged cache holding ctx_tokens per sequence over a random block table (each sequence's
    blocks a random subset of a random permutation of the pool)."""
    nb = (ctx_tokens + BLOCK - 1) // BLOCK
    nblocks = B * nb
    kc = torch.empty(LAYERS, nblocks, HKV, BLOCK, HD, device="cuda", dtype=torch.bfloat16)
    vc = torch.empty_like(kc)
    if fill:
        kc.normal_(generator=gen)
        vc.normal_(generator=gen)
    perm = torch.randperm(nblocks, device="cuda", generator=gen)
    block_table = perm.view(B, nb).to(torch.int32).contiguous()
    return kc, vc, block_table


def slots_for(block_table, positions):
    """positions [B, n] (long) -> slot ids [B*n] int32."""
    blk = torch.gather(block_table.long(), 1, positions // BLOCK)
    return (blk * BLOCK + positions % BLOCK).reshape(-1).to(torch.int32).contiguous()


def decode_state(ops, B, C, gen, fill=True):
    kc, vc, bt = paged_state(B, C + 1, gen, fill)
    pos = torch.full((B, 1), C, device="cuda", dtype=torch.long)
    part = ops.choose_part(B, C + 1)
    max_parts = (C + 1 + part - 1) // part
    n = B * HQ * max_parts
    ws = (torch.empty(n, device="cuda", dtype=torch.float32), torch.empty(n, device="cuda", dtype=torch.float32),
          torch.empty(n * HD, device="cuda", dtype=torch.float32))
    return {"tokens": torch.randint(0, VOCAB, (B,), device="cuda", generator=gen),
            "pos": pos.reshape(-1).to(torch.int32).contiguous(), "slots": slots_for(bt, pos), "block_table": bt,
            "seq_lens": torch.full((B,), C + 1, device="cuda", dtype=torch.int32), "kc": kc, "vc": vc,
            "max_ctx": C + 1, "part": part, "ws": ws}


def prefill_state(B, S, gen):
    kc, vc, bt = paged_state(B, S, gen, fill=False)
    pos = torch.arange(S, device="cuda", dtype=torch.long).expand(B, S)
    return {"tokens": torch.randint(0, VOCAB, (B, S), device="cuda", generator=gen),
            "pos": pos.reshape(-1).to(torch.int32).contiguous(), "slots": slots_for(bt, pos), "block_table": bt,
            "last": torch.arange(B, device="cuda", dtype=torch.long) * S + (S - 1), "kc": kc, "vc": vc}


def rel_err(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


# ---------------------------------------------------------------------------- checks
def check_kernels(ops, cos_sin, gen):
    """Each custom kernel against a float32 PyTorch computation on fresh random inputs."""
    out = {}

    def rn(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen)
    x, w = rn(7, HIDDEN), 1.0 + 0.1 * rn(HIDDEN)
    xf = x.float()
    out["rmsnorm"] = rel_err(ops.rmsnorm(x, w), xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float())
    a, b = rn(7, HIDDEN), rn(7, HIDDEN)
    out["add"] = rel_err(ops.add(a, b), a.float() + b.float())
    gu = rn(7, 2 * FFN)
    out["silu_mul"] = rel_err(ops.silu_mul(gu), F.silu(gu[:, :FFN].float()) * gu[:, FFN:].float())
    T = 9
    qkv = rn(T, QKV)
    before = qkv.float().clone()
    pos = torch.randint(0, 8192, (T,), device="cuda", generator=gen, dtype=torch.int32)
    ops.rope_(qkv[:, :HQ * HD], qkv[:, HQ * HD:(HQ + HKV) * HD], cos_sin, pos)
    cs = cos_sin[pos.long()].float()
    c, sn = cs[:, None, :HD // 2], cs[:, None, HD // 2:]
    heads = before[:, :(HQ + HKV) * HD].view(T, HQ + HKV, HD)
    x1, x2 = heads[..., :HD // 2], heads[..., HD // 2:]
    ref = torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], dim=-1).reshape(T, -1)
    out["rope"] = rel_err(qkv[:, :(HQ + HKV) * HD], ref)
    out["rope_v_untouched"] = rel_err(qkv[:, (HQ + HKV) * HD:], before[:, (HQ + HKV) * HD:])
    for B, C in ((3, 1000), (48, 300)):
        st = decode_state(ops, B, C, gen, fill=True)
        q = rn(B, QKV)[:, :HQ * HD]                               # strided, as in the model
        o = ops.paged_decode(q, st["kc"][0], st["vc"][0], st["block_table"], st["seq_lens"], st["max_ctx"],
                             st["part"], st["ws"]).view(B, HQ, HD)
        nb = st["block_table"].shape[1]
        kg = st["kc"][0][st["block_table"].long()].permute(0, 2, 1, 3, 4).reshape(B, HKV, nb * BLOCK, HD)[:, :, :C + 1]
        vg = st["vc"][0][st["block_table"].long()].permute(0, 2, 1, 3, 4).reshape(B, HKV, nb * BLOCK, HD)[:, :, :C + 1]
        qf = q.float().reshape(B, HQ, 1, HD)
        r = F.scaled_dot_product_attention(qf, kg.float().repeat_interleave(HQ // HKV, 1),
                                           vg.float().repeat_interleave(HQ // HKV, 1)).view(B, HQ, HD)
        out[f"paged_decode_B{B}_C{C + 1}_part{st['part']}"] = rel_err(o, r)
        # kv write: new token's K/V land at the slot of position C
        k, v = rn(B, QKV), rn(B, QKV)
        ops.kv_write(k[:, HQ * HD:(HQ + HKV) * HD], v[:, (HQ + HKV) * HD:], st["kc"][1], st["vc"][1], st["slots"])
        sl = st["slots"].long()
        got_k = st["kc"][1].permute(0, 2, 1, 3)[sl // BLOCK, sl % BLOCK].reshape(B, -1)
        got_v = st["vc"][1].permute(0, 2, 1, 3)[sl // BLOCK, sl % BLOCK].reshape(B, -1)
        out[f"kv_write_B{B}"] = max(rel_err(got_k, k[:, HQ * HD:(HQ + HKV) * HD]),
                                    rel_err(got_v, v[:, (HQ + HKV) * HD:]))
        del st
    torch.cuda.synchronize()
    bad = [k for k, e in out.items() if not e < (1e-2 if k != "rope_v_untouched" else 1e-12)]
    print("check kernels vs fp32 torch: " + ", ".join(f"{k} {e:.1e}" for k, e in out.items())
          + (" PASS" if not bad else f" FAIL: {bad}"), flush=True)
    return out


def fp32_copy(model):
    """llama_step.Llama with every weight (and the cos/sin tables) upcast to float32: the
    higher-precision reference both bf16 models are compared with."""
    m = copy.copy(model)
    m.embed, m.norm, m.lm_head = model.embed.float(), model.norm.float(), model.lm_head.float()
    m.layers = [{k: v.float() for k, v in L.items()} for L in model.layers]
    m.cos, m.sin = model.cos.float(), model.sin.float()
    return m


def check_against_plain(model, fm, ops, gen):
    """Same weights, same inputs: fused decode / prefill against llama_step.Llama in bf16, and
    both against llama_step.Llama run in float32 (bf16 rounding differences grow through 32
    random-weight layers; the fp32 comparison shows whether the fused model is as accurate as
    the plain one)."""
    results = {}
    m32 = fp32_copy(model)
    # Decode: B=3 sequences with C=300 cached tokens (contiguous cache in the plain model, the
    # same values scattered into the paged cache through a random block table).
    B, C = 3, 300
    st = decode_state(ops, B, C, gen, fill=True)
    kvp = torch.empty(LAYERS, 2, B, HKV, C + 1, HD, device="cuda", dtype=torch.bfloat16).normal_(generator=gen)
    t = torch.arange(C, device="cuda")
    blk = st["block_table"].long()[:, t // BLOCK]                  # [B, C]
    off = (t % BLOCK).expand(B, C)
    for i, cache in ((0, st["kc"]), (1, st["vc"])):
        view = cache.permute(0, 1, 3, 2, 4)                       # [L, blocks, BLOCK, HKV, HD]
        view[:, blk, off] = kvp[:, i].permute(0, 1, 3, 2, 4)[:, :, :C]
    pos_plain = torch.full((B,), C, device="cuda", dtype=torch.long)
    kv32 = kvp.float()
    ref32 = m32.decode(st["tokens"], pos_plain, kv32, C)
    ref = model.decode(st["tokens"], pos_plain, kvp, C)
    got, nxt = fm.decode(st)
    torch.cuda.synchronize()
    e, e_f32, e_p32 = rel_err(got, ref), rel_err(got, ref32), rel_err(ref, ref32)
    s = st["slots"].long()
    kc_new = st["kc"].permute(0, 1, 3, 2, 4)[:, s // BLOCK, s % BLOCK]  # [L, B, HKV, HD]
    e_kv = rel_err(kc_new, kvp[:, 0, :, :, C])
    e_kv_l = [rel_err(kc_new[li], kvp[li, 0, :, :, C]) for li in range(LAYERS)]
    agree = (nxt == ref.float().argmax(-1)).float().mean().item()
    agree32 = (nxt == ref32.argmax(-1)).float().mean().item()
    agree_p32 = (ref.float().argmax(-1) == ref32.argmax(-1)).float().mean().item()
    results["decode"] = {"batch": B, "context": C, "logits_rel_err": e, "logits_rel_err_vs_fp32": e_f32,
                         "plain_logits_rel_err_vs_fp32": e_p32, "new_k_rel_err": e_kv,
                         "new_k_rel_err_by_layer": e_kv_l, "argmax_agree": agree, "argmax_agree_vs_fp32": agree32,
                         "plain_argmax_agree_vs_fp32": agree_p32}
    print(f"check decode B={B} C={C} vs llama_step.py (bf16): logits rel_err {e:.2e} "
          f"{'PASS' if e < 2e-2 else 'FAIL'} (< 2e-2); new K in cache rel_err {e_kv:.2e} "
          f"(layer 0 {e_kv_l[0]:.1e}, 1 {e_kv_l[1]:.1e}, 15 {e_kv_l[15]:.1e}, 31 {e_kv_l[31]:.1e}); "
          f"argmax agreement {agree:.2f}", flush=True)
    print(f"check decode vs llama_step.py in fp32: fused {e_f32:.2e}, plain bf16 {e_p32:.2e} "
          f"{'PASS' if e_f32 <= 1.25 * e_p32 else 'FAIL'} (fused <= 1.25 x plain); argmax agreement with fp32: "
          f"fused {agree32:.2f}, plain {agree_p32:.2f}", flush=True)
    del st, kvp, kv32
    # Prefill: B=2 prompts of S=200 tokens; logits of the last token and the whole K/V written.
    B, S = 2, 200
    st = prefill_state(B, S, gen)
    kvp = torch.empty(LAYERS, 2, B, HKV, S, HD, device="cuda", dtype=torch.bfloat16)
    ref = model.prefill(st["tokens"], kvp, plain.pick_gqa_mode())
    kv32 = torch.empty(LAYERS, 2, B, HKV, S, HD, device="cuda", dtype=torch.float32)
    ref32 = m32.prefill(st["tokens"], kv32, "repeat_kv")
    got, nxt = fm.prefill(st)
    torch.cuda.synchronize()
    e, e_f32, e_p32 = rel_err(got, ref), rel_err(got, ref32), rel_err(ref, ref32)
    t = torch.arange(S, device="cuda")
    blk = st["block_table"].long()[:, t // BLOCK]
    off = (t % BLOCK).expand(B, S)
    ek = rel_err(st["kc"].permute(0, 1, 3, 2, 4)[:, blk, off], kvp[:, 0].permute(0, 1, 3, 2, 4))
    ev = rel_err(st["vc"].permute(0, 1, 3, 2, 4)[:, blk, off], kvp[:, 1].permute(0, 1, 3, 2, 4))
    agree = (nxt == ref.float().argmax(-1)).float().mean().item()
    ek0 = rel_err(st["kc"].permute(0, 1, 3, 2, 4)[0, blk, off], kvp[0, 0].permute(0, 2, 1, 3))
    ek32 = rel_err(st["kc"].permute(0, 1, 3, 2, 4)[:, blk, off], kv32[:, 0].permute(0, 1, 3, 2, 4))
    ekp32 = rel_err(kvp[:, 0], kv32[:, 0])
    results["prefill"] = {"batch": B, "prompt": S, "logits_rel_err": e, "logits_rel_err_vs_fp32": e_f32,
                          "plain_logits_rel_err_vs_fp32": e_p32, "k_cache_rel_err": ek, "v_cache_rel_err": ev,
                          "k_cache_layer0_rel_err": ek0, "k_cache_rel_err_vs_fp32": ek32,
                          "plain_k_cache_rel_err_vs_fp32": ekp32, "argmax_agree": agree}
    print(f"check prefill B={B} S={S} vs llama_step.py (bf16): logits rel_err {e:.2e} "
          f"{'PASS' if e < 2e-2 else 'FAIL'} (< 2e-2); paged K/V cache rel_err {ek:.2e} / {ev:.2e} "
          f"(K layer 0 {ek0:.1e}); argmax agreement {agree:.2f}", flush=True)
    print(f"check prefill vs llama_step.py in fp32: logits fused {e_f32:.2e}, plain bf16 {e_p32:.2e} "
          f"{'PASS' if e_f32 <= 1.25 * e_p32 else 'FAIL'} (fused <= 1.25 x plain); K cache fused {ek32:.2e}, "
          f"plain {ekp32:.2e}", flush=True)
    del st, kvp, kv32, m32
    torch.cuda.empty_cache()
    return results


# ---------------------------------------------------------------------------- timing
def capture(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()                                                      # warm-up: cuBLAS heuristics, lazy init
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph


def time_replays(graph, reps, warmup=2):
    for _ in range(warmup):
        graph.replay()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts), ts


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="a few points only (smoke test)")
    ap.add_argument("--build-dir", default=None, help="torch extension build directory")
    ap.add_argument("--check-only", action="store_true", help="run the correctness checks only")
    ap.add_argument("--command", default=" ".join(sys.argv))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("llama_step_fused.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.cuda.get_device_properties(0)
    t0 = time.time()
    ops = Ops(args.build_dir)
    print(f"fused_ops built and loaded in {ops.build_s:.1f} s ({ops.path}); SMs {ops.L.fo_sm_count()}", flush=True)
    model = plain.Llama()
    torch.cuda.synchronize()
    print(f"model built in {time.time() - t0:.1f} s, {torch.cuda.memory_allocated() / 1e9:.1f} GB allocated",
          flush=True)
    attn_name, attn = pick_prefill_attn()
    print(f"prefill attention: {attn_name}")
    fm = FusedLlama(model, ops, attn)
    gen = torch.Generator(device="cuda").manual_seed(2)
    decode_b, decode_c = (DECODE_B, DECODE_C) if not args.quick else ([1, 64], [512, 4095])
    prefill_b, prefill_s = (PREFILL_B, PREFILL_S) if not args.quick else ([1, 4], [128, 2048])
    decode, prefill = [], []

    with torch.inference_mode():
        checks = {"kernels": check_kernels(ops, fm.cos_sin, gen)}
        checks.update(check_against_plain(model, fm, ops, gen))
        if args.check_only:
            decode_c, prefill_s = [], []
        for C in decode_c:
            for B in decode_b:
                kv_bytes = B * C * KV_BYTES_PER_TOKEN
                if kv_bytes > KV_LIMIT_BYTES:
                    print(f"decode B={B} C={C}: skipped, KV {kv_bytes / 1e9:.1f} GB > {KV_LIMIT_BYTES / 1e9:.0f} GB")
                    continue
                st = decode_state(ops, B, C, gen)
                graph = capture(lambda: fm.decode(st))
                t, _ = time_replays(graph, reps=25, warmup=3)
                decode.append({"batch": B, "context": C, "mode": "cudagraph", "time_s": t})
                print(f"decode cudagraph B={B:4d} C={C:5d}: {t * 1e3:8.3f} ms (part {st['part']})", flush=True)
                del graph, st
                torch.cuda.empty_cache()
        for S in prefill_s:
            for B in prefill_b:
                if B * S > PREFILL_MAX_TOKENS:
                    continue
                st = prefill_state(B, S, gen)
                graph = capture(lambda: fm.prefill(st))
                est, _ = time_replays(graph, reps=1, warmup=0)
                # >= 20 replays for short steps; long prompts (up to ~1 s) fewer, to fit the budget.
                reps = 20 if est < 0.03 else max(5, min(20, math.ceil(0.6 / est)))
                t, _ = time_replays(graph, reps=reps, warmup=0)
                prefill.append({"batch": B, "prompt": S, "mode": "cudagraph", "time_s": t})
                print(f"prefill cudagraph B={B} S={S:5d}: {t * 1e3:9.2f} ms ({reps} replays)", flush=True)
                del graph, st
                torch.cuda.empty_cache()

    doc = {
        "schema": "servesim-reference-steps/1",
        "impl": "fused-calibrated-kernels",
        "model": "llama-3-8b",
        "dtype": "bf16",
        "gpu": {"name": dev.name, "compute_capability": f"{dev.major}.{dev.minor}",
                "sm_count": dev.multi_processor_count, "memory_bytes": dev.total_memory},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": args.command,
        "torch": torch.__version__,
        "kv_block_size": BLOCK,
        "prefill_attention": attn_name,
        "checks": checks,
        "decode": decode,
        "prefill": prefill,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out} in {time.time() - t0:.0f} s total")
    if not decode and not prefill:
        return
    print("\ndecode ms (rows B, columns C):")
    cs = sorted({r["context"] for r in decode})
    print("  B \\ C " + "".join(f"{c:>9d}" for c in cs))
    for B in sorted({r["batch"] for r in decode}):
        row = {r["context"]: r["time_s"] for r in decode if r["batch"] == B}
        print(f"{B:7d} " + "".join(f"{row[c] * 1e3:9.3f}" if c in row else f"{'-':>9s}" for c in cs))
    print("prefill ms (rows B, columns S):")
    ss = sorted({r["prompt"] for r in prefill})
    print("  B \\ S " + "".join(f"{s:>9d}" for s in ss))
    for B in sorted({r["batch"] for r in prefill}):
        row = {r["prompt"]: r["time_s"] for r in prefill if r["batch"] == B}
        print(f"{B:7d} " + "".join(f"{row[s] * 1e3:9.2f}" if s in row else f"{'-':>9s}" for s in ss))


if __name__ == "__main__":
    main()
