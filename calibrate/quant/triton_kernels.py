"""Triton kernels for the schemes PyTorch cannot run by itself (used by measure_quant.py):

- per-token dynamic activation quantization, bf16 -> fp8 e4m3 or int8 with one fp32 scale per
  row, and bf16 -> fp8 with one scale per 1x128 group (DeepSeek-style block FP8 activations,
  scales written in the column-major layout torch._scaled_mm's block-wise path wants);
- a W4A8 GEMM: int4 weights (symmetric, offset-binary nibbles), int8 activations, int32
  tensor-core accumulation, per-row activation and per-channel weight fp32 scales, bf16 output;
- split-K decode attention (flash-decoding) over a bf16, int8 or int4 KV cache with one fp32
  scale per (token, kv head) for K and for V, dequantised inside the kernel, plus the reduction
  over splits.

These are simple, correct kernels written for this measurement, not tuned engine kernels
(QServe, TensorRT-LLM, FlashInfer): their times bound what a scheme costs from above. The
layouts they read are made by quant_pack.py (plain torch, checked on the CPU by
measure_quant.py --selftest-cpu).
"""
import torch
import triton
import triton.language as tl


# ------------------------------------------------------------------------------------------
# per-token dynamic activation quantization

@triton.jit
def _quant_row_kernel(x_ptr, q_ptr, s_ptr, K, QMAX: tl.constexpr, IS_FP8: tl.constexpr, BLOCK: tl.constexpr):
    # one program per row: pass 1 finds the row's absolute maximum, pass 2 quantises
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    amax = tl.zeros([BLOCK], tl.float32)
    for k0 in range(0, K, BLOCK):
        x = tl.load(x_ptr + row * K + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    scale = tl.maximum(tl.max(amax, 0), 1e-12) / QMAX
    for k0 in range(0, K, BLOCK):
        m = k0 + offs < K
        x = tl.load(x_ptr + row * K + k0 + offs, mask=m, other=0.0).to(tl.float32)
        y = tl.minimum(tl.maximum(x / scale, -QMAX), QMAX)
        if IS_FP8:
            tl.store(q_ptr + row * K + k0 + offs, y.to(tl.float8e4nv), mask=m)
        else:
            y = tl.where(y >= 0, y + 0.5, y - 0.5)  # round half away from zero, then truncate
            tl.store(q_ptr + row * K + k0 + offs, y.to(tl.int32).to(tl.int8), mask=m)
    tl.store(s_ptr + row, scale)


@triton.jit
def _quant_g128_kernel(x_ptr, q_ptr, s_ptr, M, K, QMAX: tl.constexpr):
    # one program per (row, 128-column group); scale stored at [group, row] (column-major [M, K/128])
    row = tl.program_id(0).to(tl.int64)
    g = tl.program_id(1).to(tl.int64)
    offs = g * 128 + tl.arange(0, 128)
    x = tl.load(x_ptr + row * K + offs).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), 0), 1e-12) / QMAX
    y = tl.minimum(tl.maximum(x / scale, -QMAX), QMAX)
    tl.store(q_ptr + row * K + offs, y.to(tl.float8e4nv))
    tl.store(s_ptr + g * M + row, scale)


def quant_per_token(x, fp8, q=None, s=None):
    """x bf16 [M, K] -> (q [M, K] fp8 e4m3 or int8, s fp32 [M, 1]) with x ~ q * s."""
    M, K = x.shape
    if q is None:
        q = torch.empty(M, K, device=x.device, dtype=torch.float8_e4m3fn if fp8 else torch.int8)
    if s is None:
        s = torch.empty(M, 1, device=x.device, dtype=torch.float32)
    _quant_row_kernel[(M,)](x, q, s, K, QMAX=448.0 if fp8 else 127.0, IS_FP8=fp8, BLOCK=2048, num_warps=8)
    return q, s


def quant_fp8_g128(x, q=None, s=None):
    """x bf16 [M, K] -> (q fp8 [M, K], s fp32 [M, K/128] with strides (1, M)), x ~ q * s per 1x128 group."""
    M, K = x.shape
    assert K % 128 == 0
    if q is None:
        q = torch.empty(M, K, device=x.device, dtype=torch.float8_e4m3fn)
    if s is None:
        s = torch.empty(K // 128, M, device=x.device, dtype=torch.float32).t()
    _quant_g128_kernel[(M, K // 128)](x, q, s, M, K, QMAX=448.0, num_warps=1)
    return q, s


# ------------------------------------------------------------------------------------------
# W4A8 GEMM

@triton.jit
def _w4a8_kernel(a_ptr, w_ptr, sa_ptr, sw_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    # a int8 [M, K] row-major; w uint8 [K/2, N] from pack_w4_kmajor; sa fp32 [M]; sw fp32 [N];
    # c bf16 [M, N] = (a @ W^T) * sa[:, None] * sw[None, :]
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, 64)
    m_ok = rm < M
    n_ok = rn < N
    a_rows = a_ptr + rm.to(tl.int64)[:, None] * K
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k0 in range(0, K, 128):
        a_lo = tl.load(a_rows + (k0 + rk)[None, :], mask=m_ok[:, None], other=0)
        a_hi = tl.load(a_rows + (k0 + 64 + rk)[None, :], mask=m_ok[:, None], other=0)
        wrow = (k0 // 2 + rk).to(tl.int64) * N
        wp = tl.load(w_ptr + wrow[:, None] + rn[None, :], mask=n_ok[None, :], other=0).to(tl.int32)
        w_lo = ((wp & 15) - 8).to(tl.int8)
        w_hi = ((wp >> 4) - 8).to(tl.int8)
        acc += tl.dot(a_lo, w_lo, out_dtype=tl.int32)
        acc += tl.dot(a_hi, w_hi, out_dtype=tl.int32)
    sa = tl.load(sa_ptr + rm, mask=m_ok, other=0.0)
    sw = tl.load(sw_ptr + rn, mask=n_ok, other=0.0)
    out = acc.to(tl.float32) * sa[:, None] * sw[None, :]
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :], out.to(tl.bfloat16),
             mask=m_ok[:, None] & n_ok[None, :])


def w4a8_config(M, N):
    """(BM, BN, num_warps, num_stages) by token count: small tiles and many programs for
    decode-sized M, 128x128 tiles for prefill-sized M."""
    if M <= 16:
        return (16, 32 if N < 16384 else 64, 4, 4)
    if M <= 64:
        return (64, 64, 4, 4)
    return (128, 128, 8, 3)


def w4a8_gemm(a, w_packed, sa, sw, out=None):
    """a int8 [M, K], w_packed uint8 [K/2, N], sa fp32 [M] (or [M, 1]), sw fp32 [N] -> bf16 [M, N]."""
    M, K = a.shape
    N = w_packed.shape[1]
    assert K % 128 == 0 and w_packed.shape[0] == K // 2 and a.is_contiguous() and w_packed.is_contiguous()
    if out is None:
        out = torch.empty(M, N, device=a.device, dtype=torch.bfloat16)
    BM, BN, warps, stages = w4a8_config(M, N)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    _w4a8_kernel[grid](a, w_packed, sa, sw, out, M, N, K, BM=BM, BN=BN, num_warps=warps, num_stages=stages)
    return out


# ------------------------------------------------------------------------------------------
# decode attention over a bf16 / int8 / int4 KV cache (split-K, then a reduction)

@triton.jit
def _kv_halves(ptr, row, rd, n_ok, D: tl.constexpr, MODE: tl.constexpr):
    # rows `row` of a K or V cache as two bf16 halves [BLOCK_N, D/2]: dims [0, D/2) and [D/2, D).
    # MODE 0: bf16 [.., D]; 1: int8 [.., D] (scale applied by the caller); 2: uint8 [.., D/2]
    # from pack_kv_int4, whose low nibbles are the first half and high nibbles the second
    DH = D // 2
    if MODE == 2:
        p = tl.load(ptr + row[:, None] * DH + rd[None, :], mask=n_ok[:, None], other=0).to(tl.int32)
        lo = ((p & 15) - 8).to(tl.bfloat16)
        hi = ((p >> 4) - 8).to(tl.bfloat16)
    else:
        lo = tl.load(ptr + row[:, None] * D + rd[None, :], mask=n_ok[:, None], other=0).to(tl.bfloat16)
        hi = tl.load(ptr + row[:, None] * D + DH + rd[None, :], mask=n_ok[:, None], other=0).to(tl.bfloat16)
    return lo, hi


@triton.jit
def _attn_split_kernel(q_ptr, k_ptr, v_ptr, ks_ptr, vs_ptr, po_ptr, pm_ptr, pl_ptr, C, chunk, sm_scale,
                       NSPLIT, G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr,
                       MODE: tl.constexpr):
    # q bf16 [B, HKV*G, D]; k, v [B, HKV, C, ...] in the layout of MODE (see _kv_halves); int
    # modes have fp32 scales ks, vs [B, HKV, C]. One program per (b, kv head, split): the G query
    # heads of a kv head are the rows of one dot (padded to GP >= 16), head dims in two halves.
    # Writes the unnormalised partial output po [B*HKV*G, NSPLIT, D], running max pm and sum pl
    # [B*HKV*G, NSPLIT].
    DH = D // 2
    bh = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1)
    rg = tl.arange(0, GP)
    g_ok = rg < G
    rd = tl.arange(0, DH)
    qrow = (bh * G + rg)[:, None] * D
    q_lo = tl.load(q_ptr + qrow + rd[None, :], mask=g_ok[:, None], other=0.0)
    q_hi = tl.load(q_ptr + qrow + DH + rd[None, :], mask=g_ok[:, None], other=0.0)
    start = s * chunk
    end = tl.minimum(start + chunk, C)
    m_i = tl.full([GP], float("-inf"), tl.float32)
    l_i = tl.zeros([GP], tl.float32)
    acc_lo = tl.zeros([GP, DH], tl.float32)
    acc_hi = tl.zeros([GP, DH], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        n_ok = rn < end
        row = bh * C + rn
        k_lo, k_hi = _kv_halves(k_ptr, row, rd, n_ok, D, MODE)
        v_lo, v_hi = _kv_halves(v_ptr, row, rd, n_ok, D, MODE)
        if MODE == 0:
            ksc = tl.full([BLOCK_N], 1.0, tl.float32)
            vsc = tl.full([BLOCK_N], 1.0, tl.float32)
        else:
            ksc = tl.load(ks_ptr + row, mask=n_ok, other=0.0)
            vsc = tl.load(vs_ptr + row, mask=n_ok, other=0.0)
        sc = (tl.dot(q_lo, tl.trans(k_lo)) + tl.dot(q_hi, tl.trans(k_hi))) * (ksc * sm_scale)[None, :]
        sc = tl.where(n_ok[None, :], sc, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(sc, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(sc - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        pv = (p * vsc[None, :]).to(tl.bfloat16)  # the V scale of each token folded into its probability
        acc_lo = acc_lo * alpha[:, None] + tl.dot(pv, v_lo)
        acc_hi = acc_hi * alpha[:, None] + tl.dot(pv, v_hi)
        m_i = m_new
    prow = (bh * G + rg) * NSPLIT + s
    tl.store(po_ptr + prow[:, None] * D + rd[None, :], acc_lo, mask=g_ok[:, None])
    tl.store(po_ptr + prow[:, None] * D + DH + rd[None, :], acc_hi, mask=g_ok[:, None])
    tl.store(pm_ptr + prow, m_i, mask=g_ok)
    tl.store(pl_ptr + prow, l_i, mask=g_ok)


@triton.jit
def _attn_reduce_kernel(po_ptr, pm_ptr, pl_ptr, o_ptr, NSPLIT, D: tl.constexpr, SP: tl.constexpr):
    # one program per (b, q head): combine the splits' partial results
    r = tl.program_id(0).to(tl.int64)
    rs = tl.arange(0, SP)
    s_ok = rs < NSPLIT
    rd = tl.arange(0, D)
    pm = tl.load(pm_ptr + r * NSPLIT + rs, mask=s_ok, other=float("-inf"))
    pl = tl.load(pl_ptr + r * NSPLIT + rs, mask=s_ok, other=0.0)
    po = tl.load(po_ptr + (r * NSPLIT + rs)[:, None] * D + rd[None, :], mask=s_ok[:, None], other=0.0)
    mx = tl.max(pm, 0)
    w = tl.exp(pm - mx)
    out = tl.sum(po * w[:, None], 0) / tl.sum(pl * w, 0)
    tl.store(o_ptr + r * D + rd, out.to(tl.bfloat16))


def attn_splits(B, hkv, C, block_n=64, target_programs=264):
    """Splits of the context per (b, kv head) so that about target_programs programs run
    (2 per SM on a 132-SM GPU), with no empty split. Returns (nsplit, chunk)."""
    tiles = -(-C // block_n)
    want = max(1, min(tiles, -(-target_programs // (B * hkv))))
    per = -(-tiles // want)
    nsplit = -(-tiles // per)
    return nsplit, per * block_n


class DecodeAttention:
    """out [B, HQ, D] bf16 = softmax(q k^T / sqrt(D)) v per head over a KV cache of C tokens.
    mode 'bf16': k, v bf16 [B, HKV, C, D]; 'int8': int8 [B, HKV, C, D]; 'int4': uint8
    [B, HKV, C, D/2] (pack_kv_int4); int modes take fp32 scales ks, vs [B, HKV, C]. Buffers for
    the partial results are allocated once, so a call is capturable in a CUDA graph."""

    BLOCK_N = 64
    MODES = {"bf16": 0, "int8": 1, "int4": 2}

    def __init__(self, B, hq, hkv, C, D, mode, device="cuda"):
        assert mode in ("bf16", "int8", "int4") and hq % hkv == 0 and D % 32 == 0
        self.B, self.hq, self.hkv, self.C, self.D, self.mode = B, hq, hkv, C, D, mode
        self.G = hq // hkv
        self.GP = max(16, triton.next_power_of_2(self.G))
        self.nsplit, self.chunk = attn_splits(B, hkv, C, self.BLOCK_N)
        rows = B * hq
        self.po = torch.empty(rows, self.nsplit, D, device=device, dtype=torch.float32)
        self.pm = torch.empty(rows, self.nsplit, device=device, dtype=torch.float32)
        self.pl = torch.empty(rows, self.nsplit, device=device, dtype=torch.float32)
        self.out = torch.empty(B, hq, D, device=device, dtype=torch.bfloat16)
        self.scale = 1.0 / (D ** 0.5)

    def __call__(self, q, k, v, ks=None, vs=None):
        if self.mode == "bf16":
            ks = vs = self.pm  # not read in bf16 mode
        _attn_split_kernel[(self.B * self.hkv, self.nsplit)](
            q, k, v, ks, vs, self.po, self.pm, self.pl, self.C, self.chunk, self.scale, self.nsplit, G=self.G,
            GP=self.GP, D=self.D, BLOCK_N=self.BLOCK_N, MODE=self.MODES[self.mode], num_warps=4, num_stages=2)
        _attn_reduce_kernel[(self.B * self.hq,)](self.po, self.pm, self.pl, self.out, self.nsplit, D=self.D,
                                                 SP=max(2, triton.next_power_of_2(self.nsplit)), num_warps=4)
        return self.out


# ------------------------------------------------------------------------------------------
# one GEMM kernel for 16-bit, fp8 and int8 operands (the gemm8 section)

@triton.jit(do_not_specialize=["M"])
def _gemm_any_kernel(a_ptr, w_ptr, sa_ptr, sw_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, SPLIT_K: tl.constexpr, IS_INT: tl.constexpr):
    # a [M, K] and w [N, K] row-major (nn.Linear's layout), both of one dtype (bf16, fp8 e4m3 or
    # int8); sa fp32 [M], sw fp32 [N]. c = (a @ w^T) * sa[:, None] * sw[None, :]: bf16 when
    # SPLIT_K == 1, else fp32 accumulated with atomics over SPLIT_K programs per tile (the caller
    # zeroes it). K must be a multiple of BK * SPLIT_K. The element type is the only thing that
    # differs between the dtypes, so their times compare the type, not the kernel.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < M
    n_ok = rn < N
    a_rows = a_ptr + rm.to(tl.int64)[:, None] * K
    w_cols = w_ptr + rn.to(tl.int64)[None, :] * K
    if IS_INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    k_span = K // SPLIT_K
    for k0 in range(pid_k * k_span, (pid_k + 1) * k_span, BK):
        # the padding value must have the operand's kind: an integer `other` does not compile
        # for fp8 pointers (Triton 3.6), a float one is not wanted for int8
        if IS_INT:
            a = tl.load(a_rows + (k0 + rk)[None, :], mask=m_ok[:, None], other=0)
            w = tl.load(w_cols + (k0 + rk)[:, None], mask=n_ok[None, :], other=0)
            acc += tl.dot(a, w, out_dtype=tl.int32)
        else:
            a = tl.load(a_rows + (k0 + rk)[None, :], mask=m_ok[:, None], other=0.0)
            w = tl.load(w_cols + (k0 + rk)[:, None], mask=n_ok[None, :], other=0.0)
            acc += tl.dot(a, w, out_dtype=tl.float32)
    sa = tl.load(sa_ptr + rm, mask=m_ok, other=0.0)
    sw = tl.load(sw_ptr + rn, mask=n_ok, other=0.0)
    out = acc.to(tl.float32) * sa[:, None] * sw[None, :]
    cp = c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :]
    ok = m_ok[:, None] & n_ok[None, :]
    if SPLIT_K == 1:
        tl.store(cp, out.to(tl.bfloat16), mask=ok)
    else:
        tl.atomic_add(cp, out, mask=ok)


def gemm_any_configs(M, K):
    """(BM, BN, BK, SPLIT_K, num_warps, num_stages) tried at M tokens, as an engine's GEMM
    profiler tries tactics: small tiles with split-K for decode-sized M, 128-row tiles for
    prefill-sized M. Only those whose K splits evenly."""
    if M <= 16:
        cands = [(16, bn, bk, sk, 4, 4) for bn in (32, 64, 128) for bk in (128, 256) for sk in (1, 2, 4)]
    elif M <= 128:
        cands = [(64, bn, 128, sk, 4, 4) for bn in (64, 128) for sk in (1, 2)]
    else:
        cands = [(128, bn, bk, 1, 8, st) for bn in (128, 256) for bk in (64, 128) for st in (3, 4)]
    return [c for c in cands if K % (c[2] * c[3]) == 0]


def gemm_any(a, w, sa, sw, out, config):
    """c = (a @ w^T) * sa * sw with one tile configuration; out bf16 [M, N] for SPLIT_K 1, else
    fp32 [M, N], zeroed here (the zeroing is part of the call, as split-K costs it)."""
    M, K = a.shape
    N = w.shape[0]
    BM, BN, BK, SK, warps, stages = config
    if SK > 1:
        out.zero_()
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), SK)
    _gemm_any_kernel[grid](a, w, sa, sw, out, M, N, K, BM=BM, BN=BN, BK=BK, SPLIT_K=SK,
                           IS_INT=a.dtype == torch.int8, num_warps=warps, num_stages=stages)
    return out
