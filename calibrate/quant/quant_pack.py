"""Packing of int4 weights and KV caches into the layouts triton_kernels.py reads (plain torch:
also runs on the CPU, where measure_quant.py --selftest-cpu checks each against its inverse and
the kernels' arithmetic emulated in torch)."""
import torch


W4_CHUNK = 128   # the W4A8 kernel reads K in chunks of 128: low nibbles hold rows 0-63, high 64-127


def pack_w4_kmajor(wq):
    """int4 weights wq [N, K] (integers in [-8, 7], any integer dtype) -> uint8 [K/2, N].
    Row c*64 + j of the result holds W[c*128 + j] (low nibble) and W[c*128 + 64 + j] (high
    nibble), each stored as value + 8, for every output column n."""
    N, K = wq.shape
    assert K % W4_CHUNK == 0, f"K={K} must be a multiple of {W4_CHUNK}"
    w = (wq.to(torch.int32) + 8).t().contiguous().view(K // W4_CHUNK, 2, W4_CHUNK // 2, N)
    return (w[:, 0] | (w[:, 1] << 4)).to(torch.uint8).reshape(K // 2, N)


def unpack_w4_kmajor(packed):
    """Inverse of pack_w4_kmajor: uint8 [K/2, N] -> int32 [N, K]."""
    K2, N = packed.shape
    p = packed.to(torch.int32).view(K2 // (W4_CHUNK // 2), W4_CHUNK // 2, N)
    w = torch.stack(((p & 15) - 8, (p >> 4) - 8), dim=1)  # [chunks, 2, 64, N]
    return w.reshape(K2 * 2, N).t().contiguous()


def pack_kv_int4(v):
    """int4 KV values v [..., D] (integers in [-8, 7]) -> uint8 [..., D/2]: byte j holds
    v[j] + 8 (low nibble) and v[j + D/2] + 8 (high nibble)."""
    D = v.shape[-1]
    w = v.to(torch.int32) + 8
    return (w[..., : D // 2] | (w[..., D // 2:] << 4)).to(torch.uint8)


def unpack_kv_int4(p):
    """Inverse of pack_kv_int4: uint8 [..., D/2] -> int32 [..., D]."""
    p = p.to(torch.int32)
    return torch.cat(((p & 15) - 8, (p >> 4) - 8), dim=-1)


