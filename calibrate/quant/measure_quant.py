#!/usr/bin/env python3
"""Quantized linear-layer and KV-cache kernels on one GPU, for servesim's quantization tables (issue 40).

Times what plain PyTorch ships and engines call, over the linear-layer shapes of the bundled
models (models/*.json: llama-3-8b, llama-2-7b, llama-2-70b at TP1 and its TP4 shard,
mixtral-8x7b attention and experts, qwen2-7b) for M = 1 ... 8192 tokens:

  gemm       bf16 F.linear (the baseline, same process); torch._scaled_mm fp8 e4m3 with per-tensor
             and with per-row (per-token x per-channel) scales, fast accumulation on; torch._int_mm
             int8 (W8A8, int32 out) alone and with the scale epilogue in torch ops;
             torch._weight_int4pack_mm (tinygemm W4A16, group 128, what gpt-fast / plain PyTorch run)
  fp8_block  torch._scaled_mm with block-wise scales (1x128 activation groups, 128x128 weight
             blocks, DeepSeek-V3 style) if this torch has the path; bf16 baseline
  act_quant  per-token dynamic activation quantization bf16 -> fp8 / int8 (per-row scale) and
             bf16 -> fp8 per 1x128 group: torch ops (several kernels) and one Triton kernel each
  w4a8       W4A8 GEMM (int4 weights, int8 activations, per-channel scales): our Triton kernel;
             bf16 baseline
  kv_attn    decode attention over a bf16 / int8 / int4 KV cache (per-token-per-head scales,
             dequantised in the kernel): our Triton split-K kernel, and SDPA bf16 as a reference

Every kernel is checked once against a float64 (float32 for attention) reference on fresh random
data (res["checks"], relative error and tolerance). Times are GPU time per call: K calls over
rotating operand copies (>= 256 MiB per dtype, more than the H100's 50 MiB L2) captured in one
CUDA graph, median replay / K (calibrate/sectioned.py graph_time). Random data, never zeros.

  python3 calibrate/quant/measure_quant.py --out OUTDIR [--sections gemm,...] [--quick] [--budget-s S]
  python3 calibrate/quant/measure_quant.py --dry-run [--quick]     # the plan and an estimate, no GPU
  /usr/bin/python3 calibrate/quant/measure_quant.py --selftest-cpu # packing/reference logic on the CPU

Writes OUTDIR/quant_kernels.json (schema servesim-quant-kernels/1: status per section and every
section's results) and OUTDIR/parts/<section>.json. Nothing on the GPU is configured or changed.
"""
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sectioned as S  # noqa: E402
from sectioned import log  # noqa: E402

SCHEMA = "servesim-quant-kernels/1"
M_LIST = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
QUICK_M = [1, 16, 256, 4096]
# (model card, tensor-parallel degree), in the order they are timed: a section that runs out of
# budget loses the last ones (the 70B TP1 shapes are the slowest).
TARGETS = [("llama-3-8b", 1), ("llama-2-7b", 1), ("llama-2-70b", 4), ("qwen2-7b", 1), ("mixtral-8x7b", 1),
           ("llama-2-70b", 1)]
ROTATE_BYTES = 256 * 2**20
FP8_MAX, INT8_MAX = 448.0, 127.0
CHECK_NK, CHECK_M = (6144, 4096), 64          # llama-3-8b qkv
W4A16_MAX_M = 256                             # tinygemm grows ~linearly in M (H200: M=256 is 60x M=1)
W4A16_FULL_M_NK = (4096, 4096)                # ... except on this shape, which records the trend
INT_MM_MIN_M = 32                             # torch._int_mm needs M > 16: smaller M run padded to 32
BASELINE_M = [1, 16, 256, 4096]               # bf16 in the fp8_block and w4a8 sections (all M in gemm)
ACT_QUANT_K = [4096, 14336, 8192, 28672, 3584]


def card_json(name):
    with open(os.path.join(S.measure.REPO, "models", name + ".json")) as f:
        return json.load(f)


def linear_shapes():
    """[(n, k, roles)] of C[M,n] = A[M,k] W[n,k]^T, duplicates merged (roles list every use)."""
    out, index = [], {}
    for name, tp in TARGETS:
        c = S.load_card(name)
        H, q, kv = c["hidden"], c["hq"] * c["hd"], c["hkv"] * c["hd"]
        moe = card_json(name).get("moe")
        ffn = moe["expert_ffn_size"] if moe else c["ffn"]
        pre = "expert_" if moe else ""
        tag = name + (f"/tp{tp}" if tp > 1 else "")
        for role, n, k in (("qkv", (q + 2 * kv) // tp, H), ("o", H, q // tp), (pre + "gate_up", 2 * ffn // tp, H),
                           (pre + "down", H, ffn // tp)):
            if (n, k) not in index:
                index[(n, k)] = len(out)
                out.append((n, k, []))
            out[index[(n, k)]][2].append(f"{tag}:{role}")
    return out


def copies_for(nbytes):
    return max(1, min(16, math.ceil(ROTATE_BYTES / nbytes)))


def round_up(x, m):
    return (x + m - 1) // m * m


class Failures:
    """A kernel that fails 3 times is dropped for the rest of the section (an unsupported path
    should not cost the budget at every point); each failure is recorded on its row."""

    def __init__(self, ctx):
        self.ctx, self.count, self.disabled = ctx, {}, set()

    def run(self, torch, row, key, make_calls):
        if key in self.disabled:
            return
        try:
            calls = make_calls()
            if not calls:  # the kernel does not apply at this point
                return
            t, k, reps = S.graph_time(torch, calls)
            row[key] = t
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()  # a broken CUDA context raises here and ends the section
            row[key + "_error"] = repr(e)[:300]
            self.count[key] = self.count.get(key, 0) + 1
            if self.count[key] == 1:
                self.ctx.error(f"{key} m={row.get('m')} n={row.get('n')} k={row.get('k')}", e)
            if self.count[key] >= 3:
                self.disabled.add(key)
                self.ctx.res.setdefault("disabled", {})[key] = repr(e)[:300]
                log("disabled", key, "after 3 failures")


def sweep(torch, ctx, shapes, ms, prepare, kernels):
    """For each shape: ops = prepare(n, k); for each M: each kernel (key, fn(ops, M, row) ->
    calls or None to skip) is timed into one row of res['points']."""
    fails = Failures(ctx)
    ctx.res.setdefault("points", [])
    for n, k, roles in shapes:
        if ctx.over():
            ctx.skip(f"{n}x{k} all M")
            continue
        try:
            ops = prepare(n, k)
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            ctx.error(f"prepare {n}x{k}", e)
            continue
        t = time.time()
        for M in ms:
            if ctx.over():
                ctx.skip(f"{n}x{k} M={M}")
                continue
            row = {"m": M, "n": n, "k": k, "roles": roles}
            for key, fn in kernels:
                fails.run(torch, row, key, lambda fn=fn, ops=ops, M=M, row=row: fn(ops, M, row))
            ctx.res["points"].append(row)
        ctx.flush()
        log(f"{n}x{k} {roles[0]}: {time.time() - t:.1f} s")
        del ops
        torch.cuda.empty_cache()


class Skip(Exception):
    """A kernel that does not apply at this point (recorded as absent, not as an error)."""


def skip_ok(fn):
    """Wrap a kernel's call factory so that Skip means 'not timed here'."""
    def wrapped(ops, M, row):
        try:
            return fn(ops, M, row)
        except Skip:
            return []
    return wrapped


def first_working(torch, row, key, M, make):
    """make(Mrun) -> calls. Uses the first Mrun in (M, M rounded up to 16, to 128) whose first
    call runs (a kernel that needs aligned M is timed padded, as an engine would run it);
    row[key + '_m_run'] records a padded M."""
    last = None
    for Mrun in dict.fromkeys((M, round_up(M, 16), round_up(M, 128))):
        try:
            calls = make(Mrun)
            calls[0]()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            last = e
            continue
        if Mrun != M:
            row[key + "_m_run"] = Mrun
        return calls
    raise last


def bf16_copies(torch, n, k):
    """Rotating bf16 weight copies W [n, k] (>= 256 MiB together, at most 16)."""
    return [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies_for(n * k * 2))]


def bf16_baseline(torch, F):
    """The bf16 F.linear kernel of the fp8_block and w4a8 sweeps, at BASELINE_M only (all M in gemm)."""
    def k_bf16(ops, M, row):
        if M not in BASELINE_M:
            return []
        A = torch.randn(M, row["k"], device="cuda", dtype=torch.bfloat16)
        return [lambda w=w: F.linear(A, w) for w in ops["W"]]
    return k_bf16


# ----------------------------------------------------------------------------------------------
# quantization helpers (torch, CPU or GPU)


def fp8_quant(torch, x, scale):
    """x / scale rounded to fp8 e4m3 (values clamped to +-448 first: the cast does not saturate)."""
    return (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def tinygemm_pack(torch, q):
    """uint4 values q [N, K] (0..15) -> the uint8 [N, K/2] layout _convert_weight_to_int4pack takes
    on CUDA: even k in the high nibble, odd k in the low (aten/src/ATen/native/cuda/int4mm.cu)."""
    q = q.to(torch.int32)
    return ((q[:, 0::2] << 4) | q[:, 1::2]).to(torch.uint8)


def tinygemm_dequant(torch, q, scales, zeros, group=128):
    """tinygemm's dequantisation: w[n, k] = (q[n, k] - 8) * scale[k/g, n] + zero[k/g, n]."""
    s = scales.double().t().repeat_interleave(group, dim=1)
    z = zeros.double().t().repeat_interleave(group, dim=1)
    return (q.double() - 8) * s + z


def block_expand(torch, s, rows, cols, br, bc):
    """Expand block scales s [ceil(rows/br), ceil(cols/bc)] to [rows, cols]."""
    return s.repeat_interleave(br, 0)[:rows].repeat_interleave(bc, 1)[:, :cols]


# ----------------------------------------------------------------------------------------------
# section gemm


def gemm_checks(torch, F, ctx):
    n, k = CHECK_NK
    M = CHECK_M
    dev, bf = "cuda", torch.bfloat16
    A = torch.randn(M, k, device=dev, dtype=bf)
    W = torch.randn(n, k, device=dev, dtype=bf) * 0.02
    ref = A.double() @ W.double().t()
    S.check(torch, ctx, "bf16_linear", F.linear(A, W), ref, 1e-2)
    try:
        sa, sw = A.float().abs().max() / FP8_MAX, W.float().abs().max() / FP8_MAX
        A8, W8 = fp8_quant(torch, A, sa), fp8_quant(torch, W, sw)
        got = torch._scaled_mm(A8, W8.t(), scale_a=sa, scale_b=sw, out_dtype=bf, use_fast_accum=True)
        S.check(torch, ctx, "fp8_tensor", got, (A8.double() * sa) @ (W8.double() * sw).t(), 2e-2,
                vs_unquantized=S.rel_err(torch, got, ref))
    except Exception as e:  # noqa: BLE001
        ctx.error("check fp8_tensor", e)
    try:
        sa = A.float().abs().amax(1, keepdim=True) / FP8_MAX                # [M, 1]
        sw = (W.float().abs().amax(1, keepdim=True) / FP8_MAX)              # [n, 1]
        A8, W8 = fp8_quant(torch, A, sa), fp8_quant(torch, W, sw)
        got = torch._scaled_mm(A8, W8.t(), scale_a=sa, scale_b=sw.t().contiguous(), out_dtype=bf, use_fast_accum=True)
        S.check(torch, ctx, "fp8_row", got, (A8.double() * sa) @ (W8.double() * sw).t(), 2e-2,
                vs_unquantized=S.rel_err(torch, got, ref))
    except Exception as e:  # noqa: BLE001
        ctx.error("check fp8_row", e)
    try:
        AI = torch.randint(-127, 128, (M, k), device=dev, dtype=torch.int8)
        WI = torch.randint(-127, 128, (n, k), device=dev, dtype=torch.int8)
        c = torch._int_mm(AI, WI.t())
        S.check(torch, ctx, "int8_int_mm", c, AI.double() @ WI.double().t(), 1e-9)
        sa = torch.rand(M, 1, device=dev) * 0.01 + 1e-3
        sw = torch.rand(1, n, device=dev) * 0.01 + 1e-3
        S.check(torch, ctx, "int8_dequant", (c * sa).mul_(sw).to(bf),
                (AI.double() * sa.double()) @ (WI.double() * sw.double().t()).t(), 1e-2)
    except Exception as e:  # noqa: BLE001
        ctx.error("check int8", e)
    try:
        q = torch.randint(0, 16, (n, k), device=dev, dtype=torch.int32)
        scales = (torch.rand(k // 128, n, device=dev) * 0.01 + 1e-3).to(bf)
        zeros = ((torch.rand(k // 128, n, device=dev) - 0.5) * 0.01).to(bf)
        W4 = torch._convert_weight_to_int4pack(tinygemm_pack(torch, q), 8)
        sz = torch.stack((scales, zeros), dim=-1).contiguous()
        got = torch._weight_int4pack_mm(A, W4, 128, sz)
        refq = A.double() @ tinygemm_dequant(torch, q, scales, zeros).t()
        # the other nibble order, to say which one this torch uses if the check fails
        q_swapped = torch.stack((q[:, 1::2], q[:, 0::2]), dim=-1).reshape(n, k)
        alt = S.rel_err(torch, got, A.double() @ tinygemm_dequant(torch, q_swapped, scales, zeros).t())
        S.check(torch, ctx, "w4a16_tinygemm", got, refq, 1e-2, rel_err_other_nibble_order=alt)
    except Exception as e:  # noqa: BLE001
        ctx.error("check w4a16_tinygemm", e)
    ctx.flush()


def section_gemm(torch, F, ctx):
    res = ctx.res
    bf, dev = torch.bfloat16, "cuda"
    res["method"] = (
        "C[M,N] = A[M,K] W[N,K]^T. bf16_s: F.linear (cuBLAS). fp8_tensor_s: torch._scaled_mm(A8, W8.t()), e4m3, "
        "fp32 scalar scales, bf16 out, use_fast_accum=True. fp8_row_s: the same with scale_a [M,1] and scale_b "
        "[1,N] (per-token x per-channel); fp8_*_m_run where M had to be padded. int8_s: torch._int_mm(A8, W8.t()) -> int32 (M <= 16 run at M=32, "
        "int8_m_run). int8_dequant_s: int8_s plus (C * sa).mul_(sw).to(bf16) in torch ops (3 more kernels). "
        "w4a16_tinygemm_s: torch._weight_int4pack_mm(A, W4, 128, scales_and_zeros), innerKTiles 8, bf16 A "
        f"(M <= {W4A16_MAX_M}, all M on {W4A16_FULL_M_NK}). GPU time per call from CUDA-graph replay over "
        "rotating weight copies (>= 256 MiB per dtype). Activation quantization is not included (act_quant)")
    res["m_list"] = M_LIST
    gemm_checks(torch, F, ctx)
    shapes = linear_shapes()
    res["shapes"] = [{"n": n, "k": k, "roles": r} for n, k, r in shapes]
    if ctx.quick:
        shapes = shapes[:3]

    def prepare(n, k):
        ops = {"W": bf16_copies(torch, n, k)}
        w = ops["W"][0]
        sw = w.float().abs().max() / FP8_MAX
        ops["W8"] = [fp8_quant(torch, ops["W"][i % len(ops["W"])], sw) for i in range(copies_for(n * k))]
        ops["sw"] = sw
        ops["sw_row"] = (torch.rand(1, n, device=dev) * 0.01 + 1e-4)
        ops["WI"] = [torch.randint(-127, 128, (n, k), device=dev, dtype=torch.int8) for _ in range(copies_for(n * k))]
        ops["W4"] = [torch._convert_weight_to_int4pack(
            torch.randint(0, 256, (n, k // 2), device=dev, dtype=torch.uint8), 8) for _ in range(copies_for(n * k // 2))]
        ops["sz"] = torch.stack(((torch.rand(k // 128, n, device=dev) * 0.01 + 1e-3),
                                 (torch.rand(k // 128, n, device=dev) - 0.5) * 0.01), -1).to(bf).contiguous()
        return ops

    cache = {}

    def acts(M, k):
        """Activations for M tokens (kept while M and k stay the same)."""
        if (M, k) not in cache:
            cache.clear()
            A = torch.randn(M, k, device=dev, dtype=bf)
            sa = A.float().abs().max() / FP8_MAX
            sa_row = A.float().abs().amax(1, keepdim=True) / FP8_MAX
            Mi = max(M, INT_MM_MIN_M)
            cache[(M, k)] = {"A": A, "A8": fp8_quant(torch, A, sa), "sa": sa, "sa_row": sa_row,
                             "AI": torch.randint(-127, 128, (Mi, k), device=dev, dtype=torch.int8),
                             "sa_i": torch.rand(Mi, 1, device=dev) * 0.01 + 1e-4}
        return cache[(M, k)]

    def k_bf16(ops, M, row):
        a = acts(M, row["k"])
        return [lambda w=w: F.linear(a["A"], w) for w in ops["W"]]

    def k_fp8_tensor(ops, M, row):
        def make(Mrun):
            a = acts(Mrun, row["k"])
            return [lambda w=w: torch._scaled_mm(a["A8"], w.t(), scale_a=a["sa"], scale_b=ops["sw"], out_dtype=bf,
                                                 use_fast_accum=True) for w in ops["W8"]]
        return first_working(torch, row, "fp8_tensor", M, make)

    def k_fp8_row(ops, M, row):
        def make(Mrun):
            a = acts(Mrun, row["k"])
            return [lambda w=w: torch._scaled_mm(a["A8"], w.t(), scale_a=a["sa_row"], scale_b=ops["sw_row"],
                                                 out_dtype=bf, use_fast_accum=True) for w in ops["W8"]]
        return first_working(torch, row, "fp8_row", M, make)

    def k_int8(ops, M, row):
        a = acts(M, row["k"])
        row["int8_m_run"] = a["AI"].shape[0]
        return [lambda w=w: torch._int_mm(a["AI"], w.t()) for w in ops["WI"]]

    def k_int8_dequant(ops, M, row):
        a = acts(M, row["k"])
        return [lambda w=w: (torch._int_mm(a["AI"], w.t()) * a["sa_i"]).mul_(ops["sw_row"]).to(bf) for w in ops["WI"]]

    def k_w4a16(ops, M, row):
        if M > W4A16_MAX_M and (row["n"], row["k"]) != W4A16_FULL_M_NK:
            raise Skip()
        a = acts(M, row["k"])
        return [lambda w=w: torch._weight_int4pack_mm(a["A"], w, 128, ops["sz"]) for w in ops["W4"]]

    kernels = [("bf16_s", k_bf16), ("fp8_tensor_s", k_fp8_tensor), ("fp8_row_s", k_fp8_row), ("int8_s", k_int8),
               ("int8_dequant_s", k_int8_dequant), ("w4a16_tinygemm_s", skip_ok(k_w4a16))]
    sweep(torch, ctx, shapes, QUICK_M if ctx.quick else M_LIST, prepare, kernels)


# ----------------------------------------------------------------------------------------------
# section fp8_block


def block_scales_act(torch, A):
    """Per (row, 128-column group) scales of A [M, K], as [M, K/128] fp32 with strides (1, M)."""
    M, K = A.shape
    s = A.float().view(M, K // 128, 128).abs().amax(-1).clamp(min=1e-12) / FP8_MAX
    return s.t().contiguous().t()


def block_scales_weight(torch, W):
    """Per 128x128 block scales of W [N, K], as contiguous [N/128, K/128] fp32."""
    N, K = W.shape
    return W.float().view(N // 128, 128, K // 128, 128).abs().amax(dim=(1, 3)).clamp(min=1e-12) / FP8_MAX


def blockwise_apis(torch, F):
    """Ways this torch may run fp8 with 1x128 x 128x128 block scales; each is f(A8, W8, sa, sw)
    with A8 [M,K], W8 [N,K] fp8, sa [M, K/128] (strides (1, M)), sw [N/128, K/128]."""
    bf = torch.bfloat16
    apis = [("_scaled_mm_fast_accum", lambda A8, W8, sa, sw: torch._scaled_mm(
                A8, W8.t(), scale_a=sa, scale_b=sw.t(), out_dtype=bf, use_fast_accum=True)),
            ("_scaled_mm", lambda A8, W8, sa, sw: torch._scaled_mm(A8, W8.t(), scale_a=sa, scale_b=sw.t(),
                                                                   out_dtype=bf))]
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        st = F.ScalingType
        apis.append(("F.scaled_mm", lambda A8, W8, sa, sw: F.scaled_mm(
            A8, W8.t(), scale_a=sa, scale_recipe_a=st.BlockWise1x128, scale_b=sw.t(),
            scale_recipe_b=st.BlockWise128x128, output_dtype=bf)))
    return apis


def section_fp8_block(torch, F, ctx):
    res = ctx.res
    bf, dev = torch.bfloat16, "cuda"
    res["method"] = (
        "fp8 e4m3 GEMM with block-wise scales: activations one fp32 scale per 1x128 group ([M, K/128], "
        "outer-dim-major), weights one per 128x128 block ([N/128, K/128]); the first API in "
        "res['api'] that passes the check is timed (fp8_block_s; fp8_block_m_run when M had to be padded). bf16_s: "
        "F.linear baseline. Activation quantization not included (act_quant triton_fp8_g128)")
    n, k = CHECK_NK
    A = torch.randn(CHECK_M, k, device=dev, dtype=bf)
    W = torch.randn(n, k, device=dev, dtype=bf) * 0.02
    sa, sw = block_scales_act(torch, A), block_scales_weight(torch, W)
    A8 = (A.float().view(CHECK_M, k // 128, 128) / sa.reshape(CHECK_M, k // 128, 1)).clamp(
        -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(CHECK_M, k)
    W8 = (W.float().view(n // 128, 128, k // 128, 128) / sw.view(n // 128, 1, k // 128, 1)).clamp(
        -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(n, k)
    ref = (A8.double() * block_expand(torch, sa.double(), CHECK_M, k, 1, 128)) @ (
        W8.double() * block_expand(torch, sw.double(), n, k, 128, 128)).t()
    api = None
    res["api_errors"] = {}
    for name, fn in blockwise_apis(torch, F):
        try:
            got = fn(A8, W8, sa, sw)
            if S.check(torch, ctx, f"fp8_block[{name}]", got, ref, 2e-2,
                       vs_unquantized=S.rel_err(torch, got, A.double() @ W.double().t())):
                api = (name, fn)
                break
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            res["api_errors"][name] = repr(e)[:600]
            log("fp8_block", name, "failed:", repr(e)[:300])
    res["api"] = api[0] if api else None
    ctx.flush()
    if api is None:
        res["notes"] = "no block-wise fp8 path in this torch passed (see api_errors); only bf16 is timed"
    shapes = linear_shapes()
    if ctx.quick:
        shapes = shapes[:3]

    def prepare(n, k):
        W8c = [torch.randn(n, k, device=dev, dtype=bf).to(torch.float8_e4m3fn) for _ in range(copies_for(n * k))]
        return {"W": bf16_copies(torch, n, k), "W8": W8c, "sw": torch.rand(n // 128, k // 128, device=dev) * 1e-3 + 1e-4}

    def k_block(ops, M, row):
        if api is None:
            raise Skip()
        k = row["k"]

        def make(Mrun):
            A8 = torch.randn(Mrun, k, device=dev, dtype=bf).to(torch.float8_e4m3fn)
            sa = (torch.rand(k // 128, Mrun, device=dev) * 1e-3 + 1e-4).t()
            return [lambda w=w: api[1](A8, w, sa, ops["sw"]) for w in ops["W8"]]
        return first_working(torch, row, "fp8_block", M, make)

    sweep(torch, ctx, shapes, QUICK_M if ctx.quick else M_LIST, prepare,
          [("bf16_s", bf16_baseline(torch, F)), ("fp8_block_s", skip_ok(k_block))])


# ----------------------------------------------------------------------------------------------
# section act_quant


def torch_quant_row(torch, x, fp8):
    """Per-token quantization in plain torch ops (what an unfused PyTorch W8A8 path runs)."""
    if fp8:
        s = x.abs().amax(-1, keepdim=True).float().clamp_(min=1e-12).div_(FP8_MAX)
        return (x.float() / s).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), s
    s = x.abs().amax(-1, keepdim=True).float().clamp_(min=1e-12).div_(INT8_MAX)
    return (x.float() / s).round_().clamp_(-INT8_MAX, INT8_MAX).to(torch.int8), s


def torch_quant_g128(torch, x):
    M, K = x.shape
    xs = x.float().view(M, K // 128, 128)
    s = xs.abs().amax(-1, keepdim=True).clamp_(min=1e-12).div_(FP8_MAX)
    return (xs / s).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(M, K), s.view(M, K // 128)


def section_act_quant(torch, F, ctx):
    import triton_kernels as TK
    res = ctx.res
    bf, dev = torch.bfloat16, "cuda"
    res["method"] = (
        "bf16 [M, K] -> quantized [M, K] + fp32 scales, dynamic (scales computed from the data every call). "
        "torch_*: plain torch ops (abs, amax, div, clamp, round, cast: several kernels). triton_*: one Triton "
        "kernel (calibrate/quant/triton_kernels.py): *_row one scale per token, fp8_g128 one per 1x128 group "
        "(scales column-major, ready for torch._scaled_mm block-wise). bytes = 2MK read + MK written + scales. "
        "The input is not rotated (activations are usually in L2 in a real layer)")
    # checks: fresh random data, K a multiple and a non-multiple of the kernel's 2048-wide block
    for K in (4096, 11008):
        x = torch.randn(64, K, device=dev, dtype=bf) * 3
        for fp8 in (True, False):
            tag = ("fp8" if fp8 else "int8") + f"_row_k{K}"
            try:
                q_ref, s_ref = torch_quant_row(torch, x, fp8)
                q = torch.full((64, K), 127, device=dev, dtype=torch.int8)  # 0x7f: NaN as e4m3fn
                q = q.view(torch.float8_e4m3fn) if fp8 else q
                s = torch.full((64, 1), float("nan"), device=dev)
                TK.quant_per_token(x, fp8, q, s)
                S.check(torch, ctx, "triton_" + tag, q.float() * s, q_ref.float() * s_ref, 1e-2,
                        scale_rel_err=S.rel_err(torch, s, s_ref))
                S.check(torch, ctx, "triton_" + tag + "_vs_input", q.float() * s, x.float(), 5e-2 if fp8 else 2e-2)
            except Exception as e:  # noqa: BLE001
                torch.cuda.synchronize()
                ctx.error("check triton " + tag, e)
        try:
            q_ref, s_ref = torch_quant_g128(torch, x)
            q, s = TK.quant_fp8_g128(x, torch.full((64, K), 127, device=dev, dtype=torch.int8).view(torch.float8_e4m3fn),
                                     torch.full((K // 128, 64), float("nan"), device=dev).t())
            deq = q.float() * s.repeat_interleave(128, 1)
            S.check(torch, ctx, f"triton_fp8_g128_k{K}", deq, q_ref.float() * s_ref.repeat_interleave(128, 1), 1e-2,
                    scale_rel_err=S.rel_err(torch, s, s_ref))
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            ctx.error("check triton fp8_g128", e)
    ctx.flush()
    res["points"] = []
    fails = Failures(ctx)
    ks = ACT_QUANT_K if not ctx.quick else [4096, 14336]
    for K in ks:
        for M in (QUICK_M if ctx.quick else M_LIST):
            if ctx.over():
                ctx.skip(f"act_quant M={M} K={K}")
                continue
            x = torch.randn(M, K, device=dev, dtype=bf)
            row = {"m": M, "k": K, "bytes": 3 * M * K + 4 * M}
            qf = torch.empty(M, K, device=dev, dtype=torch.float8_e4m3fn)
            qi = torch.empty(M, K, device=dev, dtype=torch.int8)
            sr = torch.empty(M, 1, device=dev)
            sg = torch.empty(K // 128, M, device=dev).t()
            for key, call in (("torch_fp8_row_s", lambda: torch_quant_row(torch, x, True)),
                              ("torch_int8_row_s", lambda: torch_quant_row(torch, x, False)),
                              ("torch_fp8_g128_s", lambda: torch_quant_g128(torch, x)),
                              ("triton_fp8_row_s", lambda: TK.quant_per_token(x, True, qf, sr)),
                              ("triton_int8_row_s", lambda: TK.quant_per_token(x, False, qi, sr)),
                              ("triton_fp8_g128_s", lambda: TK.quant_fp8_g128(x, qf, sg))):
                fails.run(torch, row, key, lambda call=call: [call])
            res["points"].append(row)
        ctx.flush()
        log(f"act_quant K={K} done")


# ----------------------------------------------------------------------------------------------
# section w4a8


def section_w4a8(torch, F, ctx):
    import quant_pack as QP
    import triton_kernels as TK
    res = ctx.res
    bf, dev = torch.bfloat16, "cuda"
    res["method"] = (
        "W4A8: C[M,N] = (A8 @ W4^T) * sa[M] * sw[N], A8 int8 [M,K], W4 int4 (symmetric, per-output-channel fp32 "
        "scale, packed 2 per byte by pack_w4_kmajor), int32 tensor-core accumulation, bf16 out: our Triton kernel "
        "(calibrate/quant/triton_kernels.py, tiles by M: w4a8_config). w4a8_triton_s; bf16_s: F.linear in the "
        "same process. Activation quantization not included (act_quant triton_int8_row). A simple kernel, not "
        "QServe / TensorRT-LLM's: an upper bound on W4A8's cost")
    n, k = CHECK_NK
    for M in (1, CHECK_M, 300):
        try:
            A8 = torch.randint(-127, 128, (M, k), device=dev, dtype=torch.int8)
            Wq = torch.randint(-8, 8, (n, k), device=dev, dtype=torch.int8)
            sa = torch.rand(M, device=dev) * 0.01 + 1e-3
            sw = torch.rand(n, device=dev) * 0.01 + 1e-3
            Wp = QP.pack_w4_kmajor(Wq)
            out = torch.full((M, n), float("nan"), device=dev, dtype=bf)
            TK.w4a8_gemm(A8, Wp, sa, sw, out)
            ref = (A8.double() @ Wq.double().t()) * sa.double()[:, None] * sw.double()[None, :]
            S.check(torch, ctx, f"w4a8_triton_m{M}", out, ref, 1e-2, config=list(TK.w4a8_config(M, n)))
        except Exception as e:  # noqa: BLE001
            torch.cuda.synchronize()
            ctx.error(f"check w4a8 M={M}", e)
    ctx.flush()
    shapes = linear_shapes()
    if ctx.quick:
        shapes = shapes[:3]

    def prepare(n, k):
        Wp = [QP.pack_w4_kmajor(torch.randint(-8, 8, (n, k), device=dev, dtype=torch.int8))
              for _ in range(copies_for(n * k // 2))]
        return {"W": bf16_copies(torch, n, k), "Wp": Wp, "sw": torch.rand(n, device=dev) * 0.01 + 1e-3}

    def k_w4a8(ops, M, row):
        A8 = torch.randint(-127, 128, (M, row["k"]), device=dev, dtype=torch.int8)
        sa = torch.rand(M, device=dev) * 0.01 + 1e-3
        out = torch.empty(M, row["n"], device=dev, dtype=bf)
        row["config"] = list(TK.w4a8_config(M, row["n"]))
        return [lambda w=w: TK.w4a8_gemm(A8, w, sa, ops["sw"], out) for w in ops["Wp"]]

    sweep(torch, ctx, shapes, QUICK_M if ctx.quick else M_LIST, prepare, [("bf16_s", bf16_baseline(torch, F)), ("w4a8_triton_s", k_w4a8)])


# ----------------------------------------------------------------------------------------------
# section gemm8: one Triton kernel, three element types

GEMM8_TARGETS = ["llama-2-7b", "gpt-j-6b"]   # the models of TensorRT-LLM's H100 SmoothQuant/FP8 blog rows
GEMM8_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 8192]
GEMM8_DTYPES = ("bf16", "fp8", "int8")


def gemm8_shapes():
    """[(n, k, roles)] of the two models' linear layers at TP1 (qkv fused, gate_up fused)."""
    out, index = [], {}
    for name in GEMM8_TARGETS:
        c = card_json(name)
        H, hd = c["hidden_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        q, kv, ffn = c["num_attention_heads"] * hd, c["num_kv_heads"] * hd, c["ffn_size"]
        up = 2 * ffn if c.get("gated_mlp", True) else ffn
        for role, n, k in (("qkv", q + 2 * kv, H), ("o", H, q), ("up", up, H), ("down", H, ffn)):
            if (n, k) not in index:
                index[(n, k)] = len(out)
                out.append((n, k, []))
            out[index[(n, k)]][2].append(f"{name}:{role}")
    return out


def gemm8_operands(torch, dtype, rows, cols, dev="cuda"):
    """Random operands of one element type: int8 uniform in [-127, 127], fp8 e4m3 from a normal
    (|x| <= 4, well inside the format), bf16 normal * 0.02."""
    if dtype == "int8":
        return torch.randint(-127, 128, (rows, cols), device=dev, dtype=torch.int8)
    x = torch.randn(rows, cols, device=dev, dtype=torch.float32)
    if dtype == "fp8":
        return x.clamp(-4, 4).to(torch.float8_e4m3fn)
    return (x * 0.02).to(torch.bfloat16)


def section_gemm8(torch, F, ctx):
    import triton_kernels as TK
    res = ctx.res
    dev = "cuda"
    res["method"] = (
        "C[M,N] = (A[M,K] @ W[N,K]^T) * sa[M] * sw[N] with ONE Triton kernel (calibrate/quant/triton_kernels.py "
        "_gemm_any_kernel) whose operands are bf16, fp8 e4m3 (fp32 accumulation) or int8 (int32 accumulation): "
        "the element type is the only difference, so the times compare the type on this GPU, not two vendors' "
        "kernels. Every tile configuration of gemm_any_configs(M, K) is timed (split-K ones include zeroing "
        "their fp32 output) and the fastest kept, as an engine's GEMM profiler picks a tactic per M "
        "(TensorRT-LLM's gemm plugin profiler). triton_<dtype>_s: the best; triton_<dtype>_config: its "
        "(BM, BN, BK, SPLIT_K, warps, stages); triton_<dtype>_nosplit_s: the best without split-K; "
        "triton_<dtype>_all: every configuration's time. References in the same process: bf16_s F.linear "
        "(cuBLAS), fp8_row_s torch._scaled_mm per-row scales, bf16 out, fast accumulation; int8_s "
        "torch._int_mm (cuBLASLt, M <= 16 run at 32), no epilogue. GPU time per call from CUDA-graph replay "
        "over rotating weight copies (>= 256 MiB per dtype)")
    res["m_list"] = GEMM8_M
    shapes = gemm8_shapes()
    res["shapes"] = [{"n": n, "k": k, "roles": r} for n, k, r in shapes]
    n0, k0 = shapes[0][0], shapes[0][1]
    for dtype in GEMM8_DTYPES:
        for M, config in ((8, (16, 64, 128, 1, 4, 4)), (8, (16, 64, 128, 4, 4, 4)), (1024, (128, 128, 64, 1, 8, 3))):
            try:
                A = gemm8_operands(torch, dtype, M, k0)
                W = gemm8_operands(torch, dtype, n0, k0)
                sa = torch.rand(M, device=dev) * 0.01 + 1e-3
                sw = torch.rand(n0, device=dev) * 0.01 + 1e-3
                out = torch.full((M, n0), float("nan"), device=dev,
                                 dtype=torch.bfloat16 if config[3] == 1 else torch.float32)
                TK.gemm_any(A, W, sa, sw, out, config)
                ref = (A.double() @ W.double().t()) * sa.double()[:, None] * sw.double()[None, :]
                S.check(torch, ctx, f"gemm8_{dtype}_m{M}_splitk{config[3]}", out, ref, 1e-2, config=list(config))
            except Exception as e:  # noqa: BLE001
                torch.cuda.synchronize()
                ctx.error(f"check gemm8 {dtype} M={M} {config}", e)
                res.setdefault("error_tails", []).append(str(e)[-1500:])  # a compiler's message ends with the cause
    ctx.flush()
    if ctx.quick:
        shapes = shapes[:2]

    def prepare(n, k):
        ops = {d: [gemm8_operands(torch, d, n, k) for _ in range(copies_for(n * k * (2 if d == "bf16" else 1)))]
               for d in GEMM8_DTYPES}
        ops["sw"] = torch.rand(n, device=dev) * 0.01 + 1e-3
        ops["sw_row"] = ops["sw"].view(1, n)
        return ops

    def triton_kernel(dtype):
        def run(ops, M, row):
            # times every configuration itself and fills the row; returns no calls
            k, n = row["k"], row["n"]
            A = gemm8_operands(torch, dtype, M, k)
            sa = torch.rand(M, device=dev) * 0.01 + 1e-3
            times = {}
            for config in TK.gemm_any_configs(M, k):
                if ctx.over():
                    break
                out = torch.empty(M, n, device=dev, dtype=torch.bfloat16 if config[3] == 1 else torch.float32)
                calls = [lambda w=w, c=config, o=out: TK.gemm_any(A, w, sa, ops["sw"], o, c) for w in ops[dtype]]
                try:
                    times[config] = S.graph_time(torch, calls)[0]
                except Exception as e:  # noqa: BLE001
                    torch.cuda.synchronize()
                    row.setdefault(f"triton_{dtype}_errors", []).append(f"{config}: {str(e)[-300:]}")
                    break  # a compile error repeats for every tile
            if times:
                best = min(times, key=times.get)
                row[f"triton_{dtype}_s"], row[f"triton_{dtype}_config"] = times[best], list(best)
                nosplit = [t for c, t in times.items() if c[3] == 1]
                if nosplit:
                    row[f"triton_{dtype}_nosplit_s"] = min(nosplit)
                row[f"triton_{dtype}_all"] = [list(c) + [t] for c, t in times.items()]
            return []
        return run

    def k_bf16(ops, M, row):
        A = torch.randn(M, row["k"], device=dev, dtype=torch.bfloat16)
        return [lambda w=w: F.linear(A, w) for w in ops["bf16"]]

    def k_fp8_row(ops, M, row):
        def make(Mrun):
            A8 = gemm8_operands(torch, "fp8", Mrun, row["k"])
            sa = torch.rand(Mrun, 1, device=dev) * 0.01 + 1e-3
            return [lambda w=w: torch._scaled_mm(A8, w.t(), scale_a=sa, scale_b=ops["sw_row"], out_dtype=torch.bfloat16,
                                                 use_fast_accum=True) for w in ops["fp8"]]
        return first_working(torch, row, "fp8_row", M, make)

    def k_int8(ops, M, row):
        AI = gemm8_operands(torch, "int8", max(M, INT_MM_MIN_M), row["k"])
        if M < INT_MM_MIN_M:
            row["int8_m_run"] = INT_MM_MIN_M
        return [lambda w=w: torch._int_mm(AI, w.t()) for w in ops["int8"]]

    kernels = [("bf16_s", k_bf16), ("fp8_row_s", k_fp8_row), ("int8_s", k_int8)]
    kernels += [(f"triton_{d}", triton_kernel(d)) for d in GEMM8_DTYPES]
    sweep(torch, ctx, shapes, GEMM8_M[:2] if ctx.quick else GEMM8_M, prepare, kernels)


# ----------------------------------------------------------------------------------------------
# section kv_attn

KV_HEADS = [(32, 8, 128, "llama-3-8b"), (32, 32, 128, "llama-2-7b")]
KV_B = [1, 8, 32, 128]
KV_C = [512, 2048, 8192]
KV_MAX_BF16_BYTES = 16e9


def kv_copies(nbytes):
    """Cache copies to rotate over: >= 256 MiB, or at most 256 copies (>= 140 MB, far more than L2)."""
    return max(1, min(256, math.ceil(ROTATE_BYTES / nbytes)))


def make_kv(torch, B, hkv, C, D, mode, dev, deq=False):
    """Random K and V caches of one layer plus scales: (k, v, ks, vs), and with deq=True also the
    dequantised float32 copies (k_deq, v_deq) for the reference."""
    if mode == "bf16":
        k = torch.randn(B, hkv, C, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, hkv, C, D, device=dev, dtype=torch.bfloat16)
        return (k, v, None, None) + ((k.float(), v.float()) if deq else ())
    lo, hi = (-127, 128) if mode == "int8" else (-8, 8)
    kq = torch.randint(lo, hi, (B, hkv, C, D), device=dev, dtype=torch.int8)
    vq = torch.randint(lo, hi, (B, hkv, C, D), device=dev, dtype=torch.int8)
    amp = 1.0 / (127 if mode == "int8" else 7)
    ks = (torch.rand(B, hkv, C, device=dev) + 0.5) * amp
    vs = (torch.rand(B, hkv, C, device=dev) + 0.5) * amp
    extra = (kq.float() * ks[..., None], vq.float() * vs[..., None]) if deq else ()
    if mode == "int4":
        from quant_pack import pack_kv_int4
        kq, vq = pack_kv_int4(kq), pack_kv_int4(vq)
    return (kq, vq, ks, vs) + extra


def attn_reference(torch, q, k_deq, v_deq):
    """float32 softmax(q k^T / sqrt(D)) v with the kv heads repeated: q [B, hq, D] -> [B, hq, D]."""
    G = q.shape[1] // k_deq.shape[1]
    k = k_deq.repeat_interleave(G, 1)
    v = v_deq.repeat_interleave(G, 1)
    s = torch.einsum("bhd,bhcd->bhc", q.float(), k) / math.sqrt(q.shape[-1])
    return torch.einsum("bhc,bhcd->bhd", torch.softmax(s, -1), v)


def section_kv_attn(torch, F, ctx):
    import triton_kernels as TK
    res = ctx.res
    dev = "cuda"
    res["method"] = (
        "Decode attention, one query token per sequence, one layer, over C cached tokens: our Triton split-K "
        "kernel (triton_kernels.DecodeAttention: a program per (sequence, kv head, split), the q heads of a kv "
        "head as the rows of one tensor-core dot, online softmax, then a reduction kernel), with the cache in "
        "bf16, int8 or int4 (symmetric, one fp32 scale per token and kv head for K and for V, applied to the "
        "scores and to the probabilities, nibbles unpacked in registers): triton_{bf16,int8,int4}_s. "
        "sdpa_bf16_s: F.scaled_dot_product_attention(q [B,hq,1,D], K, V, enable_gqa) for reference. kv_bytes "
        "per mode = K+V bytes read incl. scales. KV copies rotated over >= 256 MiB")
    for hq, hkv, D, name in KV_HEADS:
        for B, C in ((3, 1000), (2, 64)):
            for mode in ("bf16", "int8", "int4"):
                try:
                    k, v, ks, vs, kd, vd = make_kv(torch, B, hkv, C, D, mode, dev, deq=True)
                    q = torch.randn(B, hq, D, device=dev, dtype=torch.bfloat16)
                    att = TK.DecodeAttention(B, hq, hkv, C, D, mode)
                    att.out.fill_(float("nan"))
                    got = att(q, k, v, ks, vs)
                    S.check(torch, ctx, f"attn_{mode}_{name}_b{B}_c{C}", got, attn_reference(torch, q, kd, vd), 1e-2,
                            nsplit=att.nsplit)
                except Exception as e:  # noqa: BLE001
                    torch.cuda.synchronize()
                    ctx.error(f"check attn {mode} {name} B={B} C={C}", e)
    ctx.flush()
    res["points"] = []
    fails = Failures(ctx)
    for hq, hkv, D, name in (KV_HEADS if not ctx.quick else KV_HEADS[:1]):
        for C in (KV_C if not ctx.quick else [2048]):
            for B in (KV_B if not ctx.quick else [1, 32]):
                bf16_bytes = 2 * B * hkv * C * D * 2
                if bf16_bytes > KV_MAX_BF16_BYTES:
                    continue
                if ctx.over():
                    ctx.skip(f"kv_attn {name} B={B} C={C}")
                    continue
                row = {"model": name, "hq": hq, "hkv": hkv, "head_dim": D, "batch": B, "context": C,
                       "kv_bytes": {"bf16": bf16_bytes, "int8": bf16_bytes // 2 + 2 * B * hkv * C * 4,
                                    "int4": bf16_bytes // 4 + 2 * B * hkv * C * 4}}
                q = torch.randn(B, hq, D, device=dev, dtype=torch.bfloat16)
                for mode in ("bf16", "int8", "int4"):
                    def calls(mode=mode):
                        nbytes = row["kv_bytes"][mode]
                        caches = [make_kv(torch, B, hkv, C, D, mode, dev) for _ in range(kv_copies(nbytes))]
                        att = TK.DecodeAttention(B, hq, hkv, C, D, mode)
                        row["nsplit"] = att.nsplit
                        return [lambda c=c: att(q, *c) for c in caches]
                    fails.run(torch, row, f"triton_{mode}_s", calls)

                def sdpa_calls():
                    caches = [make_kv(torch, B, hkv, C, D, "bf16", dev)[:2] for _ in range(kv_copies(bf16_bytes))]
                    q4 = q.unsqueeze(2)
                    return [lambda c=c: F.scaled_dot_product_attention(q4, c[0], c[1], enable_gqa=hq != hkv)
                            for c in caches]
                fails.run(torch, row, "sdpa_bf16_s", sdpa_calls)
                res["points"].append(row)
                torch.cuda.empty_cache()
            ctx.flush()
            log(f"kv_attn {name} C={C} done")


# ----------------------------------------------------------------------------------------------
# plan (--dry-run) and the CPU self-test

H100 = {"bf16": 700e12, "fp8": 1300e12, "int8": 900e12, "bw": 2.9e12, "tinygemm_row_param_s": 7e-14,
        "host_s": 0.010, "startup_s": 6.0}


def est_call(flops, nbytes, rate):
    return max(flops / rate, nbytes / H100["bw"]) + 4e-6


def est_timing(per_call, copies):
    """GPU + host seconds graph_time spends on one point (see sectioned.graph_time)."""
    k = max(copies, math.ceil(2e-4 / per_call))
    replays = min(10, max(3, 0.1 / (k * per_call)))
    return H100["host_s"] + per_call * (2 + 2 * copies + k * (2 + replays))


def plan_gemm_like(quick, kernels):
    shapes = linear_shapes()[:3] if quick else linear_shapes()
    ms = QUICK_M if quick else M_LIST
    pts, est = 0, H100["startup_s"] + 2.0
    for n, k, _ in shapes:
        est += 0.3  # weights
        for M in ms:
            for kind in kernels:
                if kind == "w4a16" and M > W4A16_MAX_M and (n, k) != W4A16_FULL_M_NK:
                    continue
                if kind == "bf16_subset" and M not in BASELINE_M:
                    continue
                kind = "bf16" if kind == "bf16_subset" else kind
                flops = 2 * M * n * k
                if kind == "w4a16":
                    per = M * n * k * H100["tinygemm_row_param_s"] + n * k / 2 / H100["bw"] + 5e-6
                    cp = copies_for(n * k // 2)
                else:
                    wb = {"bf16": 2, "fp8": 1, "int8": 1, "w4a8": 0.5}[kind]
                    rate = H100[{"w4a8": "int8"}.get(kind, kind)] * (0.5 if kind == "w4a8" else 1.0)
                    per = est_call(flops, n * k * wb + M * k * 2 + M * n * 2, rate)
                    cp = copies_for(int(n * k * wb))
                est += est_timing(per, cp)
                pts += 1
    return pts, est, [f"{len(shapes)} shapes x M {ms[0]}..{ms[-1]} ({len(ms)} values), kernels: {', '.join(kernels)}"]


def plan_gemm(quick):
    return plan_gemm_like(quick, ["bf16", "fp8", "fp8", "int8", "int8", "w4a16"])


def plan_fp8_block(quick):
    return plan_gemm_like(quick, ["bf16_subset", "fp8"])


def plan_w4a8(quick):
    pts, est, lines = plan_gemm_like(quick, ["bf16_subset", "w4a8"])
    return pts, est + 6.0, lines + ["+ Triton compile of 3 tile configurations (~2 s each)"]


def plan_act_quant(quick):
    ks = [4096, 14336] if quick else ACT_QUANT_K
    ms = QUICK_M if quick else M_LIST
    pts, est = 0, H100["startup_s"] + 6.0
    for K in ks:
        for M in ms:
            for passes in (6, 6, 6, 2, 2, 1):  # memory passes of torch ops vs one fused kernel
                est += est_timing(est_call(0, passes * 3 * M * K, 1), 1)
                pts += 1
    return pts, est, [f"K in {ks} x M {ms[0]}..{ms[-1]}: 3 torch-op and 3 Triton quantizers"]


def plan_kv_attn(quick):
    pts, est = 0, H100["startup_s"] + 8.0
    for hq, hkv, D, _ in (KV_HEADS if not quick else KV_HEADS[:1]):
        for C in (KV_C if not quick else [2048]):
            for B in (KV_B if not quick else [1, 32]):
                b16 = 2 * B * hkv * C * D * 2
                if b16 > KV_MAX_BF16_BYTES:
                    continue
                for frac in (1.0, 0.52, 0.27, 1.0):
                    nb = b16 * frac
                    est += est_timing(est_call(0, nb, 1), kv_copies(nb)) + 0.05
                    pts += 1
    return pts, est, [f"heads {[h[:3] for h in KV_HEADS]} x B {KV_B} x C {KV_C}, modes bf16/int8/int4 + SDPA"]


def plan_gemm8(quick):
    shapes = gemm8_shapes()[:2] if quick else gemm8_shapes()
    ms = GEMM8_M[:2] if quick else GEMM8_M
    pts, est = 0, H100["startup_s"] + 2.0
    compiles = set()
    for n, k, _ in shapes:
        est += 0.5  # weights of three dtypes
        for M in ms:
            for kind in ("bf16", "fp8", "int8"):
                wb = 2 if kind == "bf16" else 1
                per = est_call(2 * M * n * k, n * k * wb + M * k * 2 + M * n * 2, H100[kind])
                cp = copies_for(int(n * k * wb))
                n_conf = 18 if M <= 16 else 4 if M <= 128 else 8
                est += est_timing(per, cp) * (1 + n_conf)  # the cuBLAS reference and every Triton tile
                compiles |= {(kind, M <= 16, M <= 128, c) for c in range(n_conf)}
                pts += 1
    est += 1.5 * len(compiles)
    return pts, est, [f"{len(shapes)} shapes x M {ms}, bf16/fp8/int8: cuBLAS reference + the Triton kernel's "
                      f"tiles ({len(compiles)} compilations, ~1.5 s each)"]


SECTIONS = {
    "gemm": S.Section(section_gemm, plan_gemm, 60, 80, "bf16 / fp8 tensor / fp8 row / int8 / tinygemm W4A16"),
    "fp8_block": S.Section(section_fp8_block, plan_fp8_block, 18, 30, "fp8 with 1x128 x 128x128 block scales"),
    "act_quant": S.Section(section_act_quant, plan_act_quant, 13, 25, "per-token dynamic activation quantization"),
    "w4a8": S.Section(section_w4a8, plan_w4a8, 24, 40, "W4A8 GEMM (our Triton kernel)"),
    "kv_attn": S.Section(section_kv_attn, plan_kv_attn, 17, 30, "decode attention, bf16 / int8 / int4 KV"),
    "gemm8": S.Section(section_gemm8, plan_gemm8, 230, 280, "one Triton GEMM in bf16 / fp8 / int8, fastest tile each"),
}


def selftest_cpu():
    """Checks the torch-only logic on the CPU (any torch >= 1.13): packing round trips, the tinygemm
    reference, block-scale expansion, the W4A8 kernel's arithmetic emulated in torch, and the plans."""
    import torch
    import quant_pack as QP
    g = torch.Generator().manual_seed(0)
    t = S.SelfTest()
    ok = t.ok

    N, K = 96, 384
    wq = torch.randint(-8, 8, (N, K), generator=g)
    p = QP.pack_w4_kmajor(wq)
    ok("pack_w4_kmajor shape [K/2, N] uint8", tuple(p.shape) == (K // 2, N) and p.dtype == torch.uint8)
    ok("unpack_w4_kmajor(pack_w4_kmajor(w)) == w", torch.equal(QP.unpack_w4_kmajor(p), wq.to(torch.int32)))
    # the kernel's inner loop, emulated: per 128-chunk, dot(a_lo, lo nibbles) + dot(a_hi, hi nibbles)
    a = torch.randint(-127, 128, (5, K), generator=g)
    acc = torch.zeros(5, N, dtype=torch.int64)
    for k0 in range(0, K, 128):
        wp = p[k0 // 2: k0 // 2 + 64].to(torch.int64)
        acc += a[:, k0:k0 + 64].to(torch.int64) @ ((wp & 15) - 8)
        acc += a[:, k0 + 64:k0 + 128].to(torch.int64) @ ((wp >> 4) - 8)
    ok("W4A8 kernel arithmetic == a @ W^T (exact)", torch.equal(acc, a.to(torch.int64) @ wq.to(torch.int64).t()))
    kv = torch.randint(-8, 8, (2, 3, 7, 128), generator=g)
    ok("unpack_kv_int4(pack_kv_int4(v)) == v", torch.equal(QP.unpack_kv_int4(QP.pack_kv_int4(kv)), kv.to(torch.int32)))
    # the int4 attention kernel's split dot: q.k = q_lo.k_lo + q_hi.k_hi with k_lo/hi from the nibbles
    pk = QP.pack_kv_int4(kv).to(torch.int32)
    qv = torch.randn(128, generator=g, dtype=torch.float64)
    split = (qv[:64] * ((pk & 15) - 8)).sum(-1) + (qv[64:] * ((pk >> 4) - 8)).sum(-1)
    ok("int4 KV split dot == full dot", torch.allclose(split, (qv * kv.double()).sum(-1)))
    q = torch.randint(0, 16, (8, 256), generator=g)
    pk8 = tinygemm_pack(torch, q)
    ok("tinygemm_pack: even k in the high nibble", int(pk8[0, 0]) == (int(q[0, 0]) << 4 | int(q[0, 1])))
    sc, zr = torch.rand(2, 8, generator=g), torch.rand(2, 8, generator=g)
    d = tinygemm_dequant(torch, q, sc, zr)
    ok("tinygemm_dequant element [3, 200]", abs(float(d[3, 200]) - ((int(q[3, 200]) - 8) * float(sc[1, 3]) +
                                                                     float(zr[1, 3]))) < 1e-9)
    s = torch.arange(6.0).view(2, 3)
    e = block_expand(torch, s, 200, 300, 128, 128)
    ok("block_expand", e.shape == (200, 300) and float(e[130, 260]) == 5.0 and float(e[127, 127]) == 0.0)
    W = torch.randn(256, 384, generator=g)
    bw = block_scales_weight(torch, W)
    ok("block_scales_weight = block amax / 448", abs(float(bw[1, 2]) - float(W[128:, 256:].abs().max()) / FP8_MAX) < 1e-7)
    A = torch.randn(5, 384, generator=g)
    ba = block_scales_act(torch, A)
    ok("block_scales_act layout (M, K/128) strides (1, M)", tuple(ba.shape) == (5, 3) and ba.stride() == (1, 5)
       and abs(float(ba[4, 1]) - float(A[4, 128:256].abs().max()) / FP8_MAX) < 1e-7)
    ref = attn_reference(torch, torch.randn(2, 8, 16, generator=g), torch.randn(2, 2, 9, 16, generator=g),
                         torch.randn(2, 2, 9, 16, generator=g))
    ok("attn_reference shape", tuple(ref.shape) == (2, 8, 16))
    shapes = linear_shapes()
    ok(f"linear_shapes: {len(shapes)} unique (n, k)", len(shapes) == 19 and all(k % 128 == 0 and n % 128 == 0
                                                                                for n, k, _ in shapes))
    ok("70B TP4 shard shapes", all(any(f"llama-2-70b/tp4:{r}" in roles for _, _, roles in shapes)
                                   for r in ("qkv", "o", "gate_up", "down")))
    for name, sec in SECTIONS.items():
        pts, est, _ = sec.plan(False)
        ok(f"plan {name}: {pts} points, {est:.0f} s", pts > 0 and est > 0)
    return t.done()


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    if "--selftest-cpu" in sys.argv:
        sys.exit(selftest_cpu())
    S.main(__file__, __doc__, SCHEMA, "quant_kernels.json", SECTIONS, default_budget_s=140)
