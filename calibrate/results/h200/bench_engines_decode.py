# issue5 H200 measurements (fixed after the recorded run: see capture()): Llama-3-8B-shaped decode (torch eager vs CUDA graph), HF transformers
# eager decode, two streams / two processes decoding at once, and a few quantized GEMMs.
# Usage: python3 bench.py OUTDIR. Writes OUTDIR/engines_decode.json after every section.
import json, os, sys, time, math, traceback, datetime
import torch
import torch.nn.functional as F

OUT = sys.argv[1]
RES = {"date_utc": datetime.datetime.utcnow().isoformat() + "Z", "command": "python3 .dev/issue5/bench.py $OUT",
       "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "errors": {}}
def save():
    with open(os.path.join(OUT, "engines_decode.json"), "w") as f: json.dump(RES, f, indent=1)
T0 = time.time()
def log(*a): print(f"[{time.time()-T0:7.1f}s]", *a, flush=True)

L, H, NH, NKV, HD, FFN, V = 32, 4096, 32, 8, 128, 14336, 128256
CTX = 512           # tokens already in each sequence's KV cache
CMAX = CTX + 64
dev = "cuda"; bf = torch.bfloat16

def rmsnorm(x, w):  # unfused, as plain PyTorch writes it
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

def rope(x, cos, sin):  # x [B,1,h,hd]
    x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

class Model:
    def __init__(self, bmax):
        g = lambda *s: torch.randn(*s, device=dev, dtype=bf) * 0.02
        self.emb = g(V, H); self.head = g(H, V); self.lnf = torch.ones(H, device=dev, dtype=bf)
        self.layers = [dict(ln1=torch.ones(H, device=dev, dtype=bf), ln2=torch.ones(H, device=dev, dtype=bf),
                            wqkv=g(H, (NH + 2 * NKV) * HD), wo=g(NH * HD, H), w13=g(H, 2 * FFN), w2=g(FFN, H)) for _ in range(L)]
        self.kc = [torch.randn(bmax, NKV, CMAX, HD, device=dev, dtype=bf) for _ in range(L)]
        self.vc = [torch.randn(bmax, NKV, CMAX, HD, device=dev, dtype=bf) for _ in range(L)]
        inv = 1.0 / (500000.0 ** (torch.arange(0, HD // 2, device=dev).float() / (HD // 2)))
        ang = torch.outer(torch.arange(CMAX, device=dev).float(), inv)
        self.cos, self.sin = ang.cos().to(bf), ang.sin().to(bf)
    def step(self, tok, pos):  # tok [B,1] int64, pos [1] int64 (device): one decode token per sequence
        B = tok.shape[0]
        x = self.emb[tok]
        cos = self.cos[pos].view(1, 1, 1, HD // 2); sin = self.sin[pos].view(1, 1, 1, HD // 2)
        for i, w in enumerate(self.layers):
            r = rmsnorm(x, w["ln1"])
            qkv = r @ w["wqkv"]
            q, k, v = qkv.split([NH * HD, NKV * HD, NKV * HD], dim=-1)
            q = rope(q.view(B, 1, NH, HD), cos, sin).transpose(1, 2)
            k = rope(k.view(B, 1, NKV, HD), cos, sin).transpose(1, 2)
            v = v.view(B, 1, NKV, HD).transpose(1, 2)
            kc, vc = self.kc[i][:B], self.vc[i][:B]
            kc.index_copy_(2, pos, k); vc.index_copy_(2, pos, v)
            a = F.scaled_dot_product_attention(q, kc[:, :, :CTX + 1], vc[:, :, :CTX + 1], enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(B, 1, NH * HD) @ w["wo"]
            r = rmsnorm(x, w["ln2"])
            gu = r @ w["w13"]
            gt, up = gu.split([FFN, FFN], dim=-1)
            x = x + (F.silu(gt) * up) @ w["w2"]
        logits = rmsnorm(x, self.lnf) @ self.head
        return logits.argmax(-1)

def sdpa_ctx():
    try:
        q = torch.randn(2, NH, 1, HD, device=dev, dtype=bf); k = torch.randn(2, NKV, 8, HD, device=dev, dtype=bf)
        with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.FLASH_ATTENTION, torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION]):
            F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        RES["sdpa"] = "flash/efficient"
        return torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.FLASH_ATTENTION, torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION])
    except Exception as e:
        RES["sdpa"] = "default (" + repr(e)[:120] + ")"
        import contextlib; return contextlib.nullcontext()

def time_fn(fn, n, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter() - t) / n

def host_issue_time(fn, n):  # host time to issue n steps when the queue is not full (measured without sync inside)
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): fn()
    h = (time.perf_counter() - t) / n
    torch.cuda.synchronize(); return h

BATCHES = [1, 8, 32, 128, 256]
pos = torch.tensor([CTX], device=dev)
def capture(m, b, stream=None):
    tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): m.step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr): m.step(tok, pos)
    gr.static_tok = tok  # keep the static input alive (the recorded run crashed without this)
    return gr

def sections():
    try:
        # launch cost of one tiny eager op (host-bound)
        a = torch.zeros(16, device=dev)
        RES["eager_tiny_op_s"] = time_fn(lambda: a.add_(1.0), 2000, warm=50)
        log("tiny op", RES["eager_tiny_op_s"])
        with sdpa_ctx():
            A = Model(max(BATCHES))
            RES["model"] = dict(layers=L, hidden=H, heads=NH, kv_heads=NKV, head_dim=HD, ffn=FFN, vocab=V, context_tokens=CTX)
            RES["torch_eager"] = {}; RES["torch_cudagraph"] = {}
            graphs = {}
            for b in BATCHES:
                tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
                te = time_fn(lambda: A.step(tok, pos), 10)
                hi = host_issue_time(lambda: A.step(tok, pos), 3)
                graphs[b] = capture(A, b)
                tg = time_fn(lambda: graphs[b].replay(), 20)
                RES["torch_eager"][str(b)] = {"step_s": te, "host_issue_s": hi}
                RES["torch_cudagraph"][str(b)] = {"step_s": tg}
                log("b", b, "eager", te, "issue", hi, "graph", tg); save()
            try:
                from torch.profiler import profile, ProfilerActivity
                tok = torch.zeros(1, 1, dtype=torch.long, device=dev)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    A.step(tok, pos); torch.cuda.synchronize()
                ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                RES["torch_eager_kernels_per_step"] = len(ev)
                RES["torch_eager_kernel_time_s_b1"] = sum(e.device_time for e in ev) * 1e-6 if ev and hasattr(ev[0], "device_time") else None
                log("kernels", len(ev))
            except Exception as e:
                RES["errors"]["profiler"] = repr(e)
            save()
            # contention: two model instances on two streams, each replaying its graph
            Bm = Model(128)
            RES["streams"] = {}
            for b in [1, 32, 128]:
                ga, gb = graphs[b], capture(Bm, b)
                sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
                alone = time_fn(lambda: ga.replay(), 20)
                def both():
                    with torch.cuda.stream(sa): ga.replay()
                    with torch.cuda.stream(sb): gb.replay()
                for _ in range(3): both()
                torch.cuda.synchronize(); t = time.perf_counter(); n = 20
                for _ in range(n): both()
                torch.cuda.synchronize(); tb = (time.perf_counter() - t) / n
                RES["streams"][str(b)] = {"alone_step_s": alone, "two_streams_round_s": tb, "total_speedup": 2 * alone / tb}
                log("streams b", b, alone, tb); save()
            del Bm, graphs, A
            torch.cuda.empty_cache()
    except Exception as e:
        RES["errors"]["torch"] = traceback.format_exc(); log(RES["errors"]["torch"]); save()

    # Hugging Face transformers, eager, random weights from a LlamaConfig (no downloads)
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
        RES["transformers"] = transformers.__version__
        cfg = LlamaConfig(hidden_size=H, intermediate_size=FFN, num_hidden_layers=L, num_attention_heads=NH,
                          num_key_value_heads=NKV, vocab_size=V, max_position_embeddings=8192, rope_theta=500000.0)
        torch.set_default_dtype(bf)
        with torch.device(dev):
            hf = LlamaForCausalLM(cfg)
        torch.set_default_dtype(torch.float32)
        hf.eval(); log("hf built")
        RES["hf_transformers"] = {}
        with torch.inference_mode():
            for b in [1, 8, 32, 128]:
                ids = torch.randint(0, V, (b, CTX), device=dev)
                try:
                    out = hf(input_ids=ids, use_cache=True, logits_to_keep=1)
                except TypeError:
                    out = hf(input_ids=ids, use_cache=True)
                pkv = out.past_key_values; nxt = out.logits[:, -1:].argmax(-1)
                stt = {'pkv': pkv, 'nxt': nxt}
                def st():
                    o = hf(input_ids=stt['nxt'], past_key_values=stt['pkv'], use_cache=True)
                    stt['pkv'] = o.past_key_values; stt['nxt'] = o.logits[:, -1:].argmax(-1)
                ts = time_fn(st, 10)
                RES["hf_transformers"][str(b)] = {"step_s": ts}
                log("hf b", b, ts); save()
                del pkv, out, stt; torch.cuda.empty_cache()
        del hf; torch.cuda.empty_cache()
    except Exception as e:
        RES["errors"]["hf"] = traceback.format_exc(); log(RES["errors"]["hf"]); save()

    # GEMMs: bf16, fp8 (_scaled_mm), int8 (_int_mm), int8 weight-only dequant-then-GEMM, per M
    try:
        RES["gemm"] = []
        for (N, K) in [(4096, 4096), (28672, 4096), (4096, 14336)]:
            w = torch.randn(K, N, device=dev, dtype=bf)
            w8 = w.to(torch.float8_e4m3fn).t().contiguous().t()
            wi = torch.randint(-127, 127, (K, N), device=dev, dtype=torch.int8)
            wit = wi.t().contiguous().t()
            sc = torch.ones(N, device=dev, dtype=bf)
            one = torch.ones((), device=dev)
            for M in [1, 16, 64, 256, 1024, 4096]:
                x = torch.randn(M, K, device=dev, dtype=bf)
                r = {"m": M, "n": N, "k": K}
                ev = lambda f: time_fn(f, 20)
                r["bf16_s"] = ev(lambda: x @ w)
                try:
                    x8 = x.to(torch.float8_e4m3fn)
                    r["fp8_s"] = ev(lambda: torch._scaled_mm(x8, w8, scale_a=one, scale_b=one, out_dtype=bf))
                except Exception as e: r["fp8_err"] = repr(e)[:200]
                try:
                    if M > 16:
                        xi = torch.randint(-127, 127, (M, K), device=dev, dtype=torch.int8)
                        r["int8_s"] = ev(lambda: torch._int_mm(xi, wit))
                except Exception as e: r["int8_err"] = repr(e)[:200]
                r["w8a16_dequant_then_gemm_s"] = ev(lambda: (x @ wi.to(bf)) * sc)
                RES["gemm"].append(r)
            log("gemm", N, K); save()
    except Exception as e:
        RES["errors"]["gemm"] = traceback.format_exc(); log(RES["errors"]["gemm"]); save()


# two processes each decoding with its own model (time-sliced without MPS)
def child(rank, barrier, q):
    try:
        torch.cuda.set_device(0)
        with sdpa_ctx():
            m = Model(32)
            res = {}
            for b in [1, 32]:
                gr = capture(m, b)
                alone = None
                for turn in range(2):  # each process alone in turn, then both together
                    barrier.wait(timeout=90)
                    if turn == rank: alone = time_fn(lambda: gr.replay(), 20)
                barrier.wait(timeout=90)
                tog = time_fn(lambda: gr.replay(), 40)
                res[str(b)] = {"alone_step_s": alone, "together_step_s": tog}
        q.put((rank, res))
    except Exception:
        q.put((rank, traceback.format_exc()))

if __name__ == "__main__":
    sections()
    try:
        import torch.multiprocessing as mp
        ctx = mp.get_context("spawn"); barrier = ctx.Barrier(2); q = ctx.Queue()
        ps = [ctx.Process(target=child, args=(r, barrier, q)) for r in range(2)]
        for p in ps: p.start()
        got = {}
        for _ in range(2):
            r, res = q.get(timeout=120); got[str(r)] = res
        for p in ps: p.join(timeout=20)
        RES["processes"] = got; log("procs", got)
    except Exception as e:
        RES["errors"]["processes"] = traceback.format_exc(); log(RES["errors"]["processes"])
    RES["total_wall_s"] = time.time() - T0
    save(); log("done")
