#!/usr/bin/env python3
"""Speculative-decoding pieces timed on one GPU with random weights (issue 38).

Acceptance cannot be measured here (no real weights): these are the costs a what-if needs, each
step replayed from a CUDA graph, per call GPU time (median of the replays):

  verify_<target>  the target model's verify pass: batch B sequences, each with q = k+1 new query
                   tokens (the last accepted token and k draft tokens) over a KV cache of C
                   earlier tokens; attention is causal within the q new tokens and sees all C
                   cached ones; logits for all B*q positions and argmax. k = 0 is a plain decode
                   step. Targets: llama-3-8b and llama-2-7b (models/*.json).
  drafts           a draft model's decode step (q = 1) over its own KV cache of C tokens:
                   Llama-3.2-1B-shaped (draft for llama-3-8b) and llama-68m-shaped (for
                   llama-2-7b); and an EAGLE-style head per target: embed(token) ++ target hidden
                   state -> fc (2H -> H, bias) -> one decoder layer of the target's width with its
                   own KV cache -> final norm -> the target's LM head -> argmax.

The decoder is calibrate/independent/measure.py's plain-PyTorch Decoder (fused QKV / gate_up
F.linear, HF-style RMSNorm and RoPE, random bf16 weights) with a q-token forward added here.
Attention over the cache goes through the fastest of several PyTorch paths that pass a check
against a float32 reference with an explicit lower-right causal mask (res["attention"] has each
path's error and time and the one used); a 2-layer model's verify pass over 4 tokens is also checked against 4 sequential
one-token steps (same logits, same KV writes).

  python3 calibrate/specdec/measure_specdec.py --out OUTDIR [--sections ...] [--quick] [--budget-s S]
  python3 calibrate/specdec/measure_specdec.py --dry-run [--quick]
  /usr/bin/python3 calibrate/specdec/measure_specdec.py --selftest-cpu   # the verify logic on the CPU

Writes OUTDIR/specdec.json (schema servesim-specdec/1) and OUTDIR/parts/<section>.json.
"""
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sectioned as S  # noqa: E402
from sectioned import log  # noqa: E402

SCHEMA = "servesim-specdec/1"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]
DRAFT_K = [0, 1, 2, 3, 4, 5, 7]
CONTEXTS = [512, 2048]
QUICK = {"batches": [1, 16], "k": [0, 3], "contexts": [512]}
Q_MAX = 8                      # the cache is allocated for C + Q_MAX tokens (k <= 7)
TARGETS = ["llama-3-8b", "llama-2-7b"]

# Draft models, from their config.json on the Hugging Face Hub:
# meta-llama/Llama-3.2-1B (read through its mirror unsloth/Llama-3.2-1B): hidden_size 2048,
#   num_hidden_layers 16, num_attention_heads 32, num_key_value_heads 8, head_dim 64,
#   intermediate_size 8192, vocab_size 128256, rope_theta 500000, tie_word_embeddings true.
# JackFram/llama-68m (read through its mirror TheBlokeAI/JackFram-Llama-68M): hidden_size 768,
#   num_hidden_layers 2, num_attention_heads 12, num_key_value_heads 12 (head_dim 64),
#   intermediate_size 3072, vocab_size 32000, max_position_embeddings 2048, rope_theta 10000,
#   tie_word_embeddings false. (Its 2048-position limit is not enforced: C=2048 is timed anyway.)
DRAFTS = {
    "llama-3.2-1b": {"target": "llama-3-8b", "layers": 16, "hidden": 2048, "hq": 32, "hkv": 8, "hd": 64,
                     "ffn": 8192, "vocab": 128256, "rope_theta": 500000.0, "tied": True, "max_ctx": 131072},
    "llama-68m": {"target": "llama-2-7b", "layers": 2, "hidden": 768, "hq": 12, "hkv": 12, "hd": 64,
                  "ffn": 3072, "vocab": 32000, "rope_theta": 10000.0, "tied": False, "max_ctx": 2048},
}


def grid(quick):
    return (QUICK["batches"], QUICK["k"], QUICK["contexts"]) if quick else (BATCHES, DRAFT_K, CONTEXTS)


def kv_bytes_per_token(card):
    return card["layers"] * 2 * card["hkv"] * card["hd"] * 2


# ----------------------------------------------------------------------------------------------
# attention over the cache: candidate paths, checked against an explicit lower-right mask


def lower_right_mask(torch, L, S, device):
    """[L, S] bool: query i (the i-th of the L new tokens, at position S - L + i) sees keys j <= S - L + i."""
    i = torch.arange(L, device=device)[:, None]
    j = torch.arange(S, device=device)[None, :]
    return j <= (S - L) + i


def attention_reference(torch, q, k, v):
    """float32 math: q [B, hq, L, d], k/v [B, hkv, S, d] (kv heads repeated), lower-right causal."""
    G = q.shape[1] // k.shape[1]
    kf, vf = k.float().repeat_interleave(G, 1), v.float().repeat_interleave(G, 1)
    s = q.float() @ kf.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~lower_right_mask(torch, q.shape[2], k.shape[2], q.device), float("-inf"))
    return torch.softmax(s, -1) @ vf


def attention_paths(torch, F):
    """[(name, f(q, k, v) -> [B, hq, L, d])], the engine-like ones first."""
    paths = []
    try:
        from torch.nn.attention.bias import causal_lower_right

        def sdpa_lower_right(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(q.shape[2], k.shape[2]),
                                                  enable_gqa=q.shape[1] != k.shape[1])
        paths.append(("sdpa_causal_lower_right", sdpa_lower_right))
    except ImportError:
        pass

    def aten_flash(q, k, v):
        # FlashAttention-2 with is_causal and fewer queries than keys aligns the mask bottom-right
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)[0]
    paths.append(("aten_flash_is_causal", aten_flash))
    masks = {}

    def grouped_rows(q, k, v):
        # the G q heads of a kv head become G*L query rows of that head, with an explicit mask
        B, hq, L, d = q.shape
        hkv, S = k.shape[1], k.shape[2]
        G = hq // hkv
        key = (G, L, S)
        if key not in masks:
            masks[key] = lower_right_mask(torch, L, S, q.device).repeat(G, 1)
        o = F.scaled_dot_product_attention(q.reshape(B, hkv, G * L, d), k, v, attn_mask=masks[key])
        return o.reshape(B, hq, L, d)
    paths.append(("sdpa_grouped_rows_bool_mask", grouped_rows))

    def repeat_kv(q, k, v):
        G = q.shape[1] // k.shape[1]
        key = (1, q.shape[2], k.shape[2])
        if key not in masks:
            masks[key] = lower_right_mask(torch, q.shape[2], k.shape[2], q.device)
        return F.scaled_dot_product_attention(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1),
                                              attn_mask=masks[key])
    paths.append(("sdpa_repeat_kv_bool_mask", repeat_kv))
    return paths


_PICKED = {}


def pick_attention(torch, F, ctx, hq, hkv, hd, tag):
    """Of the paths whose output matches the float32 reference (5 new tokens over 7 and over 301
    keys, 1 over 300), the fastest on a verify-sized problem (16 sequences x 5 new tokens over
    2048 cached ones), as an engine would pick its kernel. Recorded under res['attention'][tag]."""
    out = ctx.res.setdefault("attention", {}).setdefault(tag, {"checks": {}})
    if (hq, hkv, hd) in _PICKED:
        out.update(_PICKED[(hq, hkv, hd)][1])
        return _PICKED[(hq, hkv, hd)][0]
    best = None
    for name, fn in attention_paths(torch, F):
        try:
            errs = []
            for L, S_ in ((5, 7), (5, 301), (1, 300)):  # (5, 7): a mask off by one key shows
                q = torch.randn(2, hq, L, hd, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(2, hkv, S_, hd, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(2, hkv, S_, hd, device="cuda", dtype=torch.bfloat16)
                errs.append(S.rel_err(torch, fn(q, k, v), attention_reference(torch, q, k, v)))
            rec = {"rel_err_L5S7_L5S301_L1S300": errs, "pass": all(e <= 1e-2 for e in errs)}
            if rec["pass"]:
                q = torch.randn(16, hq, 5, hd, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(16, hkv, 2053, hd, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(16, hkv, 2053, hd, device="cuda", dtype=torch.bfloat16)
                rec["time_b16_q5_c2048_s"] = S.graph_time(torch, [lambda: fn(q, k, v)])[0]
                if best is None or rec["time_b16_q5_c2048_s"] < best[2]:
                    best = (name, fn, rec["time_b16_q5_c2048_s"])
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            rec = {"error": repr(e)[:400], "pass": False}
        out["checks"][name] = rec
        log(f"attention path {name} ({tag}): {rec}")
    out["path"] = best[0] if best else None
    ctx.flush()
    if best is None:
        raise RuntimeError("no attention path passed its check")
    _PICKED[(hq, hkv, hd)] = (best[1], {"checks": out["checks"], "path": out["path"]})
    return best[1]


# ----------------------------------------------------------------------------------------------
# the model: measure.py's Decoder plus a q-token forward


class Verifier(S.measure.Decoder):
    """Decoder with forward over L new tokens per sequence at positions ctx .. ctx+L-1. kv[l] is
    [2, B, hkv, >= ctx+L, hd] (a view into a larger cache is fine): the new K/V are written at
    ctx .. ctx+L-1 and attention runs over the first ctx+L entries."""

    def __init__(self, torch, F, card, attn):
        super().__init__(torch, F, card)
        self.attn = attn
        if card.get("tied"):
            self.lm_head = self.embed

    def layers_forward(self, x, ctx, kv):
        F, c = self.F, self.c
        B, L, _ = x.shape
        hq, hkv, hd = c["hq"], c["hkv"], c["hd"]
        cos, sin = self.cos[ctx:ctx + L], self.sin[ctx:ctx + L]
        for li, Ly in enumerate(self.layers):
            h = self.rmsnorm(x, Ly["ln1"])
            q, k, v = F.linear(h, Ly["wqkv"], Ly["bqkv"]).split([hq * hd, hkv * hd, hkv * hd], dim=-1)
            q = self.rope(q.view(B, L, hq, hd).transpose(1, 2), cos, sin)
            kv[li][0, :, :, ctx:ctx + L] = self.rope(k.view(B, L, hkv, hd).transpose(1, 2), cos, sin)
            kv[li][1, :, :, ctx:ctx + L] = v.view(B, L, hkv, hd).transpose(1, 2)
            o = self.attn(q, kv[li][0, :, :, :ctx + L], kv[li][1, :, :, :ctx + L])
            x = x + F.linear(o.transpose(1, 2).reshape(B, L, hq * hd), Ly["wo"])
            x = self.mlp(x, Ly)
        return x

    def logits(self, x):
        return self.F.linear(self.rmsnorm(x, self.norm), self.lm_head)

    def verify(self, tokens, ctx, kv):
        """tokens [B, L] -> logits [B, L, vocab]"""
        return self.logits(self.layers_forward(self.F.embedding(tokens, self.embed), ctx, kv))

    def step(self, tokens, ctx, kv):
        """The timed step: verify and greedy choice at every position -> [B, L]"""
        return self.torch.argmax(self.verify(tokens, ctx, kv), dim=-1)

    def new_cache(self, B, S_):
        """Random bf16 KV cache: one [2, B, hkv, S_, hd] tensor per layer."""
        c = self.c
        return [self.torch.empty(2, B, c["hkv"], S_, c["hd"], device="cuda", dtype=self.torch.bfloat16).normal_()
                for _ in range(c["layers"])]


class EagleHead:
    """EAGLE-style draft head for a target: x = fc(embed(token) ++ hidden) (2H -> H, with bias),
    then one decoder layer of the target's shape (own KV cache), final norm, the target's LM head
    and argmax; returns the token and x (the next step's hidden state)."""

    def __init__(self, torch, F, card, attn):
        self.torch, self.F = torch, F
        self.dec = Verifier(torch, F, dict(card, layers=1), attn)
        g = torch.Generator(device="cuda").manual_seed(2)
        H = card["hidden"]
        self.fc_w = torch.randn(H, 2 * H, device="cuda", dtype=torch.bfloat16, generator=g) * 0.02
        self.fc_b = torch.randn(H, device="cuda", dtype=torch.bfloat16, generator=g) * 0.02

    def step(self, tokens, hidden, ctx, kv):
        e = self.F.embedding(tokens, self.dec.embed)
        x = self.F.linear(self.torch.cat((e, hidden), dim=-1), self.fc_w, self.fc_b)
        x = self.dec.layers_forward(x, ctx, kv)
        return self.torch.argmax(self.dec.logits(x), dim=-1), x


def graph_step_time(torch, fn, reps):
    """Capture fn (one eager warm-up on a side stream), replay: median, min, max seconds."""
    g = S.measure.capture(torch, fn, warm=1)
    med, lo, hi = S.measure.event_median(torch, g.replay, 1, reps)
    del g
    return med, lo, hi


def reps_for(step_s):
    """Replays to time: 7, or 4 for steps over 20 ms (graph replays repeat within ~1%)."""
    return 7 if step_s < 0.02 else 4


def kv_limit_bytes(torch, weights_bytes):
    """KV budget: 90% of the GPU's memory less the weights and 6 GB for activations and graphs."""
    total = torch.cuda.get_device_properties(0).total_memory
    return max(0.0, 0.9 * total - weights_bytes - 6e9)


# ----------------------------------------------------------------------------------------------
# sections


def consistency_check(torch, F, ctx, card, attn, tag):
    """A 2-layer model of the target's shape: one verify pass over 4 tokens must give the logits
    and KV entries of 4 sequential one-token steps (positions, RoPE, cache writes and the causal
    mask all agree). A short context (3 tokens) so that a mask off by one shows."""
    m = Verifier(torch, F, dict(card, layers=2), attn)
    B, C, L = 2, 3, 4
    base = m.new_cache(B, C + Q_MAX)
    kv_a = [t.clone() for t in base]
    kv_b = [t.clone() for t in base]
    tokens = torch.randint(0, card["vocab"], (B, L), device="cuda")
    lv = m.verify(tokens, C, kv_a)
    ls = torch.cat([m.verify(tokens[:, i:i + 1], C + i, kv_b) for i in range(L)], dim=1)
    S.check(torch, ctx, f"verify_vs_sequential_logits_{tag}", lv, ls, 3e-2)
    S.check(torch, ctx, f"verify_vs_sequential_kv_{tag}", torch.stack([t[:, :, :, C:C + L] for t in kv_a]),
            torch.stack([t[:, :, :, C:C + L] for t in kv_b]), 3e-2)
    del m, base, kv_a, kv_b


def section_verify(target):
    def run(torch, F, ctx):
        res = ctx.res
        card = S.load_card(target)
        res["model"] = card
        res["method"] = (
            "Verifier.step(tokens [B, q], C, kv): embedding, per layer RMSNorm, fused QKV F.linear, RoPE at "
            "positions C..C+q-1, K/V written into a preallocated contiguous bf16 cache (a view of a larger one), "
            "attention over C+q keys, causal within the q new tokens (res['attention'] names the path), O proj, "
            "MLP; final norm, LM head over all B*q positions, argmax. Random bf16 weights. graph_s: median of the "
            "replays of one CUDA graph of the step (min/max too); k = q - 1 draft tokens, k = 0 is plain decode. "
            "Points whose KV exceeds kv_limit_bytes are skipped (listed under skipped_kv)")
        attn = pick_attention(torch, F, ctx, card["hq"], card["hkv"], card["hd"], target)
        consistency_check(torch, F, ctx, card, attn, target)
        ctx.flush()
        t = time.time()
        m = Verifier(torch, F, card, attn)
        torch.cuda.synchronize()
        wbytes = sum(p.numel() * 2 for L in m.layers for p in L.values() if p is not None) + 2 * m.embed.numel() * 2
        res["build_s"], res["weights_bytes"] = time.time() - t, wbytes
        limit = kv_limit_bytes(torch, wbytes)
        res["kv_limit_bytes"] = limit
        res["points"] = []
        batches, ks, contexts = grid(ctx.quick)
        per_tok = kv_bytes_per_token(card)
        gen = torch.Generator(device="cuda").manual_seed(1)
        for C in contexts:
            fit = [B for B in batches if B * (C + Q_MAX) * per_tok <= limit]
            res.setdefault("skipped_kv", []).extend(f"B={B} C={C}" for B in batches if B not in fit)
            if not fit or ctx.over():
                continue
            kv = m.new_cache(max(fit), C + Q_MAX)
            kvv, guess = None, 0.01
            for B in fit:
                kvv = [t_[:, :B] for t_ in kv]
                for k in ks:
                    if ctx.over():
                        ctx.skip(f"B={B} k={k} C={C}")
                        continue
                    L = k + 1
                    try:
                        tokens = torch.randint(0, card["vocab"], (B, L), device="cuda", generator=gen)
                        med, lo, hi = graph_step_time(torch, lambda t=tokens, kv_=kvv: m.step(t, C, kv_), reps_for(guess))
                        guess = med
                        res["points"].append({"batch": B, "k": k, "query_tokens": L, "context": C,
                                              "tokens_per_step": B * L, "graph_s": med, "graph_min_s": lo,
                                              "graph_max_s": hi})
                        log(f"verify {target} B={B} k={k} C={C}: {med * 1e3:.3f} ms")
                    except Exception as e:  # noqa: BLE001
                        torch.cuda.synchronize()
                        ctx.error(f"verify B={B} k={k} C={C}", e)
                ctx.flush()
            del kv, kvv
            torch.cuda.empty_cache()
    return run


def section_drafts(torch, F, ctx):
    res = ctx.res
    res["method"] = (
        "draft: a draft model's decode step (q = 1 token per sequence) over its own bf16 KV cache of C tokens, "
        "Verifier.step with the model's shape (DRAFTS, from the Hub config.json of each, cited in the script); "
        "eagle: one EAGLE-style head step per target (EagleHead: embed ++ hidden -> fc 2H->H -> one decoder layer "
        "with its own C-token cache -> norm -> target LM head -> argmax). graph_s: median CUDA-graph replay. The "
        "draft runs k such steps per verify pass (not timed here as a chain: k x graph_s plus the host's loop)")
    res["drafts"], res["eagle"] = {}, {}
    batches, _, contexts = grid(ctx.quick)
    gen = torch.Generator(device="cuda").manual_seed(3)
    jobs = [("draft", name, dict(DRAFTS[name], name=name, qkv_bias=False)) for name in DRAFTS]
    jobs += [("eagle", t, S.load_card(t)) for t in TARGETS]
    for kind, name, card in jobs:
        if ctx.over():
            ctx.skip(f"{kind} {name}")
            continue
        try:
            attn = pick_attention(torch, F, ctx, card["hq"], card["hkv"], card["hd"], f"{kind}_{name}")
            model = Verifier(torch, F, card, attn) if kind == "draft" else EagleHead(torch, F, card, attn)
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            ctx.error(f"build {kind} {name}", e)
            continue
        dec = model if kind == "draft" else model.dec
        rows = []
        res["drafts" if kind == "draft" else "eagle"][name] = {"model": {k: v for k, v in card.items()}, "points": rows}
        for C in contexts:
            kv = dec.new_cache(max(batches), C + Q_MAX)
            for B in batches:
                if ctx.over():
                    ctx.skip(f"{kind} {name} B={B} C={C}")
                    continue
                kvv = [t_[:, :B] for t_ in kv]
                try:
                    tokens = torch.randint(0, card["vocab"], (B, 1), device="cuda", generator=gen)
                    if kind == "draft":
                        fn = lambda md=model, t=tokens, kv_=kvv: md.step(t, C, kv_)  # noqa: E731
                    else:
                        hidden = torch.randn(B, 1, card["hidden"], device="cuda", dtype=torch.bfloat16)
                        fn = lambda md=model, t=tokens, h=hidden, kv_=kvv: md.step(t, h, C, kv_)  # noqa: E731
                    med, lo, hi = graph_step_time(torch, fn, 7)
                    rows.append({"batch": B, "context": C, "graph_s": med, "graph_min_s": lo, "graph_max_s": hi})
                    log(f"{kind} {name} B={B} C={C}: {med * 1e3:.3f} ms")
                except Exception as e:  # noqa: BLE001
                    torch.cuda.synchronize()
                    ctx.error(f"{kind} {name} B={B} C={C}", e)
            ctx.flush()
            del kv
        del model, dec
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
# plan (--dry-run)

H100_BF16, H100_BW, POINT_HOST_S, STARTUP_S = 650e12, 2.9e12, 0.09, 7.0


def est_step(card, B, L, C):
    """Roofline estimate of one step (weights + KV read, 2 flops per weight per token) + launch floor."""
    H, q, kv, ffn, V = card["hidden"], card["hq"] * card["hd"], card["hkv"] * card["hd"], card["ffn"], card["vocab"]
    params = card["layers"] * (H * (q + 2 * kv) + q * H + 3 * H * ffn) + V * H
    t = max(2 * params * B * L / H100_BF16, (2 * params + B * C * kv_bytes_per_token(card)) / H100_BW)
    return t + card["layers"] * 25 * 0.6e-6


def plan_verify(target):
    def plan(quick):
        card = S.load_card(target)
        batches, ks, contexts = grid(quick)
        limit = 80e9 * 0.9 - 2 * 8e9 - 6e9
        pts, est = 0, STARTUP_S + 4.0
        for C in contexts:
            for B in batches:
                if B * (C + Q_MAX) * kv_bytes_per_token(card) > limit:
                    continue
                for k in ks:
                    t = est_step(card, B, k + 1, C)
                    est += POINT_HOST_S + card["layers"] * 1.5e-3 + t * (reps_for(t) + 3)
                    pts += 1
        return pts, est, [f"B {batches} x k {ks} x C {contexts} (KV <= ~50 GB on an 80 GB GPU)"]
    return plan


def plan_drafts(quick):
    batches, _, contexts = grid(quick)
    pts, est = 0, STARTUP_S
    cards = [dict(d, name=n) for n, d in DRAFTS.items()] + [dict(S.load_card(t), layers=1) for t in TARGETS]
    for card in cards:
        est += 1.0
        for C in contexts:
            for B in batches:
                t = est_step(card, B, 1, C)
                est += 0.03 + card["layers"] * 1.5e-3 + t * 10
                pts += 1
    return pts, est, [f"drafts {list(DRAFTS)} and EAGLE heads for {TARGETS}: B {batches} x C {contexts}"]


SECTIONS = {
    "verify_llama-3-8b": S.Section(section_verify("llama-3-8b"), plan_verify("llama-3-8b"), 36, 50,
                                   "llama-3-8b verify pass over k+1 tokens"),
    "verify_llama-2-7b": S.Section(section_verify("llama-2-7b"), plan_verify("llama-2-7b"), 31, 45,
                                   "llama-2-7b verify pass over k+1 tokens"),
    "drafts": S.Section(section_drafts, plan_drafts, 22, 35, "draft models' decode steps and EAGLE heads"),
}



def selftest_cpu():
    """The verify logic on the CPU in float32 (any torch >= 1.13, no SDPA needed): the grouped-rows
    and repeat-kv attention paths against the explicit-mask reference (through a math stand-in for
    F.scaled_dot_product_attention), and a tiny Verifier's verify pass against sequential steps,
    plus the same check with a wrong (top-left) mask, which must fail."""
    import types
    import torch
    import torch.nn.functional as TF
    g = torch.Generator().manual_seed(0)
    t = S.SelfTest()
    ok = t.ok

    def sdpa_math(q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
        assert not is_causal and not enable_gqa
        s_ = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if attn_mask is not None:
            s_ = s_.masked_fill(~attn_mask, float("-inf"))
        return torch.softmax(s_, -1) @ v

    F = types.SimpleNamespace(linear=TF.linear, embedding=TF.embedding, silu=TF.silu, scaled_dot_product_attention=sdpa_math)
    m = lower_right_mask(torch, 3, 7, "cpu")
    ok("lower_right_mask: last query sees all keys, first sees S-L+1", bool(m[2].all()) and int(m[0].sum()) == 5)
    q, k, v = (torch.randn(2, 8, 3, 16, generator=g), torch.randn(2, 2, 10, 16, generator=g),
               torch.randn(2, 2, 10, 16, generator=g))
    ref = attention_reference(torch, q, k, v)
    for name, fn in attention_paths(torch, F):
        if name in ("sdpa_grouped_rows_bool_mask", "sdpa_repeat_kv_bool_mask"):
            ok(f"attention path {name} == reference", float((fn(q, k, v) - ref).abs().max()) < 1e-5)

    card = {"name": "tiny", "layers": 2, "hidden": 64, "hq": 4, "hkv": 2, "hd": 16, "ffn": 96, "vocab": 50,
            "max_ctx": 64, "qkv_bias": False, "rope_theta": 10000.0}

    def tiny(attn):
        mdl = Verifier.__new__(Verifier)
        mdl.torch, mdl.F, mdl.c, mdl.attn, mdl.gqa = torch, F, card, attn, True
        H, hq, hkv, hd, ffn, V = 64, 4, 2, 16, 96, 50
        w = lambda *sh, scale=0.2: torch.randn(*sh, generator=torch.Generator().manual_seed(sum(sh))) * scale  # noqa: E731
        mdl.embed = w(V, H, scale=1.0)
        mdl.layers = [{"ln1": 1 + w(H, scale=0.1), "wqkv": w((hq + 2 * hkv) * hd, H), "bqkv": None, "wo": w(H, hq * hd),
                       "ln2": 1 + w(H, scale=0.1), "wgu": w(2 * ffn, H), "wd": w(H, ffn)} for _ in range(2)]
        mdl.norm, mdl.lm_head = 1 + w(H, scale=0.1), w(V, H)
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        emb = torch.cat((torch.outer(torch.arange(64, dtype=torch.float32), inv),) * 2, dim=-1)
        mdl.cos, mdl.sin = emb.cos(), emb.sin()
        mdl.new_cache = lambda B, S_: [torch.randn(2, B, hkv, S_, hd, generator=g) for _ in range(2)]
        return mdl

    def top_left(q, k, v):  # the wrong alignment: query i sees keys j <= i
        G = q.shape[1] // k.shape[1]
        mask = torch.arange(k.shape[2])[None, :] <= torch.arange(q.shape[2])[:, None]
        return sdpa_math(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1), attn_mask=mask)

    for attn, name, want in ((lambda q, k, v: attention_reference(torch, q, k, v), "reference mask", True),
                             (dict(attention_paths(torch, F))["sdpa_grouped_rows_bool_mask"], "grouped rows", True),
                             (top_left, "top-left mask (must differ)", False)):
        mdl = tiny(attn)
        base = mdl.new_cache(2, 6 + Q_MAX)
        kv_a, kv_b = [t.clone() for t in base], [t.clone() for t in base]
        tokens = torch.randint(0, 50, (2, 4), generator=g)
        lv = mdl.verify(tokens, 6, kv_a)
        ls = torch.cat([mdl.verify(tokens[:, i:i + 1], 6 + i, kv_b) for i in range(4)], dim=1)
        err = float((lv - ls).norm() / ls.norm())
        same_kv = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(kv_a, kv_b))
        ok(f"verify(4 tokens) vs 4 sequential steps, {name}: rel err {err:.1e}, KV equal {same_kv}",
           (err < 1e-5 and same_kv) if want else err > 1e-2)
    for name, sec in SECTIONS.items():
        pts, est, _ = sec.plan(False)
        ok(f"plan {name}: {pts} points, {est:.0f} s", pts > 0)
    return t.done()


if __name__ == "__main__":
    if "--selftest-cpu" in sys.argv:
        sys.exit(selftest_cpu())
    S.main(__file__, __doc__, SCHEMA, "specdec.json", SECTIONS, default_budget_s=95)
