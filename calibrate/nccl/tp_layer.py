#!/usr/bin/env python3
"""One Llama-3-70B-shaped decoder layer split Megatron-style over N GPUs (PyTorch + NCCL).

Launch:  NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node N calibrate/nccl/tp_layer.py \
             --out OUT/tp_layer_tpN.json [--driver 580.x] [--quick]

Shape: hidden 8192, 64 q heads, 8 kv heads, head_dim 128, FFN 28672 (SiLU-gated), RMSNorm, NeoX RoPE,
bf16, random weights. Rank r holds 64/N q heads and max(1, 8/N) kv heads (column-parallel fused QKV),
the matching O rows (row-parallel), 28672/N of the fused gate/up (column-parallel) and of down
(row-parallel). Per layer: rmsnorm, QKV GEMM, RoPE, KV-cache write, attention, O GEMM, all-reduce,
residual add, rmsnorm, gate/up GEMM, SiLU*mul, down GEMM, all-reduce, residual add: the op list of
`servesim step --tp N` (sim/model/ops.cpp) for one layer.

Cases: decode at batch 1, 8, 32, 128 with 1024 cached tokens per sequence (contiguous KV cache
tensor [B, kv_heads, 1025, 128]; the new token is written at position 1024 and attention covers all
1025), and prefill of 512 and 2048 tokens (batch 1, causal). Attention is
torch.nn.functional.scaled_dot_product_attention on the local heads. Decode uses grouped-query
attention by folding the q heads of one kv head into query rows ([B, kv, g, d] against
[B, kv, C+1, d]), which is exact because decode has no mask (as calibrate/reference/llama_step.py).

Timing: `--layers` distinct layers (own weights and KV cache, so weights come from HBM) run back to
back form one sample; decode samples are captured once in a CUDA graph and replayed (`--prefill-mode`
eager by default, as engines run prefill), with CUDA events around each sample on every rank; a
sample's time is the slowest rank's (all-reduce MAX), per layer = sample / layers; median over
`--reps`. Each case is also timed without its two all-reduces (`layer_no_comm_s`), and the all-reduce
alone at the same message size ([tokens, 8192] bf16 = tokens * 16384 bytes), captured the same way
(`allreduce_s`, per all-reduce).

Rank 0 writes JSON (schema servesim-tp-layer/1). Refuses to run unless NCCL_NVLS_ENABLE=0.
"""
import argparse
import datetime
import json
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 8192, 64, 8, 128, 28672
EPS = 1e-5


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def rope(x, cos, sin):
    # x [..., T, d]; cos/sin [T, d] (NeoX: rotate halves)
    h = x.shape[-1] // 2
    rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    return x * cos + rot * sin


class TPLayer:
    """One rank's shard of the layer, plus its KV cache."""

    def __init__(self, tp, rank, device, cache_batch, cache_len, prefill_len, gen):
        assert HEADS % tp == 0 and FFN % tp == 0
        self.tp = tp
        self.nh = HEADS // tp
        # More ranks than kv heads: each rank keeps (replicates) the kv head its q heads use.
        self.nkv = max(1, KV_HEADS // tp)
        self.group = self.nh // self.nkv
        self.ffn = FFN // tp
        d = device

        def w(*shape, scale=0.02):
            return (torch.randn(*shape, generator=gen, device=d, dtype=torch.float32) * scale).to(torch.bfloat16)

        self.w_qkv = w((self.nh + 2 * self.nkv) * HEAD_DIM, HIDDEN)
        self.w_o = w(HIDDEN, self.nh * HEAD_DIM)
        self.w_gu = w(2 * self.ffn, HIDDEN)
        self.w_down = w(HIDDEN, self.ffn)
        self.n1 = torch.ones(HIDDEN, device=d, dtype=torch.bfloat16)
        self.n2 = torch.ones(HIDDEN, device=d, dtype=torch.bfloat16)
        self.k_cache = w(cache_batch, self.nkv, cache_len, HEAD_DIM, scale=1.0) if cache_batch else None
        self.v_cache = w(cache_batch, self.nkv, cache_len, HEAD_DIM, scale=1.0) if cache_batch else None
        # Prefill writes its K/V into a cache of its own (batch 1, the longest prompt).
        self.pk_cache = torch.zeros(1, self.nkv, max(1, prefill_len), HEAD_DIM, device=d, dtype=torch.bfloat16)
        self.pv_cache = torch.zeros_like(self.pk_cache)

    def weight_bytes(self):
        return sum(t.numel() * t.element_size() for t in (self.w_qkv, self.w_o, self.w_gu, self.w_down, self.n1, self.n2))

    def attention_decode(self, h, cos, sin, pos):
        b = h.shape[0]
        qkv = F.linear(h, self.w_qkv)  # [B, (nh + 2 nkv) d]
        q, k, v = qkv.split([self.nh * HEAD_DIM, self.nkv * HEAD_DIM, self.nkv * HEAD_DIM], dim=-1)
        q = rope(q.view(b, self.nh, 1, HEAD_DIM), cos, sin)
        k = rope(k.view(b, self.nkv, 1, HEAD_DIM), cos, sin)
        self.k_cache[:b, :, pos : pos + 1] = k
        self.v_cache[:b, :, pos : pos + 1] = v.view(b, self.nkv, 1, HEAD_DIM)
        qg = q.view(b, self.nkv, self.group, HEAD_DIM)  # q heads of one kv head as query rows
        o = F.scaled_dot_product_attention(qg, self.k_cache[:b, :, : pos + 1], self.v_cache[:b, :, : pos + 1])
        return o.reshape(b, self.nh * HEAD_DIM)

    def attention_prefill(self, h, cos, sin):
        s = h.shape[0]
        qkv = F.linear(h, self.w_qkv)
        q, k, v = qkv.split([self.nh * HEAD_DIM, self.nkv * HEAD_DIM, self.nkv * HEAD_DIM], dim=-1)
        q = rope(q.view(s, self.nh, HEAD_DIM).transpose(0, 1).unsqueeze(0), cos, sin)  # [1, nh, S, d]
        k = rope(k.view(s, self.nkv, HEAD_DIM).transpose(0, 1).unsqueeze(0), cos, sin)
        v = v.view(s, self.nkv, HEAD_DIM).transpose(0, 1).unsqueeze(0)
        self.pk_cache[:, :, :s] = k
        self.pv_cache[:, :, :s] = v
        try:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        except TypeError:  # torch < 2.5: no enable_gqa
            o = F.scaled_dot_product_attention(
                q, k.repeat_interleave(self.group, dim=1), v.repeat_interleave(self.group, dim=1), is_causal=True
            )
        return o[0].transpose(0, 1).reshape(s, self.nh * HEAD_DIM)

    def forward(self, x, cos, sin, pos, comm=True):
        h = rmsnorm(x, self.n1)
        a = self.attention_decode(h, cos, sin, pos) if pos is not None else self.attention_prefill(h, cos, sin)
        o = F.linear(a, self.w_o)
        if comm:
            dist.all_reduce(o)
        x = x + o
        h = rmsnorm(x, self.n2)
        gu = F.linear(h, self.w_gu)
        g, u = gu.split(self.ffn, dim=-1)
        m = F.linear(F.silu(g) * u, self.w_down)
        if comm:
            dist.all_reduce(m)
        return x + m


def rope_tables(positions, device):
    inv = 1.0 / (500000.0 ** (torch.arange(0, HEAD_DIM, 2, device=device, dtype=torch.float32) / HEAD_DIM))
    f = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)


def time_samples(fn, reps, use_graph, device):
    """Median over reps of the slowest rank's time for one call of fn (seconds), plus min/max."""
    stream = torch.cuda.Stream(device=device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up (cuBLAS heuristics, NCCL connections, SDPA kernel choice)
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    graph = None
    if use_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        torch.cuda.synchronize(device)
    run = graph.replay if graph is not None else fn
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize(device)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        t = torch.tensor([start.elapsed_time(stop) * 1e-3], device=device, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    del graph
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--driver", default="")
    ap.add_argument("--command", default="", help="the launching command line, recorded verbatim")
    ap.add_argument("--layers", type=int, default=4, help="distinct layers per timed sample")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--prompts", default="512,2048")
    ap.add_argument("--prefill-mode", choices=["eager", "graph"], default="eager")
    ap.add_argument("--decode-mode", choices=["eager", "graph"], default="graph")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()

    nvls = os.environ.get("NCCL_NVLS_ENABLE")
    if nvls != "0":
        print(f"tp_layer.py: refusing to run: NCCL_NVLS_ENABLE must be '0' (NVLink multicast off), got {nvls!r}",
              file=sys.stderr)
        sys.exit(2)
    if "LOCAL_RANK" not in os.environ:
        print("tp_layer.py: launch with torchrun --nproc_per_node N", file=sys.stderr)
        sys.exit(2)
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    try:
        dist.init_process_group("nccl", device_id=device)
    except TypeError:  # torch < 2.3
        dist.init_process_group("nccl")
    rank, tp = dist.get_rank(), dist.get_world_size()
    if HEADS % tp or FFN % tp or tp > KV_HEADS:
        if rank == 0:
            print(f"tp_layer.py: world size {tp} does not divide the heads/FFN (use 2, 4 or 8)", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    torch.backends.cuda.matmul.allow_tf32 = False

    batches = [int(b) for b in args.batches.split(",") if b]
    prompts = [int(s) for s in args.prompts.split(",") if s]
    reps, nlayers = args.reps, args.layers
    if args.quick:
        batches, prompts, reps, nlayers = batches[:2], prompts[:1], min(reps, 5), min(nlayers, 2)
    cache_len = args.context + 1
    gen = torch.Generator(device=device)
    gen.manual_seed(1234 + rank)
    layers = [TPLayer(tp, rank, device, max(batches, default=0), cache_len, max(prompts, default=0), gen)
              for _ in range(nlayers)]
    # Warm the NCCL communicator eagerly before any graph capture.
    warm = torch.ones(1024, device=device, dtype=torch.bfloat16)
    dist.all_reduce(warm)
    torch.cuda.synchronize(device)

    records = []

    def log(msg):
        if rank == 0:
            print(msg, flush=True)

    def run_case(phase, batch, context, prompt, tokens, x, cos, sin, pos, use_graph):
        def layer_fn(comm):
            def fn():
                y = x
                for L in layers:
                    y = L.forward(y, cos, sin, pos, comm=comm)
                return y

            return fn

        ar_buf = torch.zeros(tokens, HIDDEN, device=device, dtype=torch.bfloat16)  # in place: zeros never overflow
        n_ar = 2 * nlayers

        def ar_fn():
            for _ in range(n_ar):
                dist.all_reduce(ar_buf)

        med, lo, hi = time_samples(layer_fn(True), reps, use_graph, device)
        med_nc, lo_nc, hi_nc = time_samples(layer_fn(False), reps, use_graph, device)
        ar_med, ar_lo, ar_hi = time_samples(ar_fn, reps, use_graph, device)
        rec = {
            "phase": phase, "batch": batch, "context": context, "prompt": prompt, "tokens": tokens, "tp": tp,
            "mode": "graph" if use_graph else "eager", "layers_per_sample": nlayers, "reps": reps,
            "layer_s": med / nlayers, "layer_min_s": lo / nlayers, "layer_max_s": hi / nlayers,
            "layer_no_comm_s": med_nc / nlayers, "layer_no_comm_min_s": lo_nc / nlayers,
            "layer_no_comm_max_s": hi_nc / nlayers,
            "allreduce_bytes": tokens * HIDDEN * 2, "allreduce_s": ar_med / n_ar,
            "allreduce_min_s": ar_lo / n_ar, "allreduce_max_s": ar_hi / n_ar,
        }
        records.append(rec)
        log(f"  {phase:7s} B={batch:4d} C={context:5d} S={prompt:5d} tp={tp}: layer {rec['layer_s']*1e6:9.1f} us, "
            f"no comm {rec['layer_no_comm_s']*1e6:9.1f} us, all-reduce {rec['allreduce_bytes']:>9d} B "
            f"{rec['allreduce_s']*1e6:8.1f} us ({rec['mode']})")

    log(f"tp_layer.py: tp={tp}, {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
        f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, {nlayers} layers/sample, {reps} reps, "
        f"{layers[0].weight_bytes()/1e6:.0f} MB weights/layer/rank")
    for b in batches:
        x = torch.randn(b, HIDDEN, device=device, dtype=torch.float32, generator=gen).to(torch.bfloat16)
        cos, sin = rope_tables(torch.tensor([args.context], device=device), device)
        run_case("decode", b, args.context, 0, b, x, cos, sin, args.context, args.decode_mode == "graph")
    for s in prompts:
        x = torch.randn(s, HIDDEN, device=device, dtype=torch.float32, generator=gen).to(torch.bfloat16)
        cos, sin = rope_tables(torch.arange(s, device=device), device)
        run_case("prefill", 1, 0, s, s, x, cos, sin, None, args.prefill_mode == "graph")

    if rank == 0:
        nccl_v = torch.cuda.nccl.version()
        out = {
            "schema": "servesim-tp-layer/1",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": args.command or ("torchrun --nproc_per_node %d %s" % (tp, " ".join(sys.argv))),
            "gpu": {"name": torch.cuda.get_device_name(device), "driver": args.driver,
                    "compute_capability": "%d.%d" % torch.cuda.get_device_capability(device)},
            "torch_version": torch.__version__,
            "cuda_runtime": torch.version.cuda,
            "nccl_version": ".".join(map(str, nccl_v)) if isinstance(nccl_v, tuple) else str(nccl_v),
            "tp": tp,
            "env": {k: os.environ[k] for k in ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "CUDA_VISIBLE_DEVICES")
                    if k in os.environ},
            "model_shape": {"name": "llama-3-70b", "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS,
                            "head_dim": HEAD_DIM, "ffn": FFN, "dtype": "bf16", "kv_heads_per_rank": layers[0].nkv},
            "timing": "per layer = median over reps of (slowest rank's CUDA-event time of `layers_per_sample` distinct "
                      "layers run back to back) / layers_per_sample; decode replayed from a CUDA graph, prefill "
                      "eager unless mode says graph; layer_no_comm_s: same without the two all-reduces; allreduce_s: "
                      "one all-reduce of allreduce_bytes (= tokens * hidden * 2), timed alone the same way",
            "records": records,
        }
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"tp_layer.py: wrote {len(records)} records to {args.out}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
