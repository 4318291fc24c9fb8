# issue5 H200 measurements: Llama-3-8B-shaped decode (torch eager vs CUDA graph), two model instances on two
# CUDA streams, HF transformers eager decode, quantized GEMMs (fp8, int8, weight-only int8/int4) and two processes.
# Usage: python3 bench_engines_decode.py OUTDIR [NAME.json]; BENCH_SECTIONS="decode hf gemm processes" picks
# sections, BENCH_TIMEOUT_S overrides every section's time limit. Each section runs in its own child process with a time
# limit (a sticky CUDA error or a hang in one cannot lose the others); OUTDIR/NAME.json (default
# engines_decode.json) is rewritten after every section, and errors land under its "errors" key.
import json, os, sys, time, math, traceback, datetime, subprocess

T0 = time.time()
def log(*a): print(f"[{time.time()-T0:7.1f}s]", *a, flush=True)

L, H, NH, NKV, HD, FFN, V = 32, 4096, 32, 8, 128, 14336, 128256
CTX = 512           # tokens already in each sequence's KV cache
CMAX = CTX + 64
BATCHES = [1, 8, 32, 128, 256]
# section -> time limit (s); the sum stays under one 600 s device call
SECTIONS = {"decode": 120, "hf": 120, "gemm": 270, "processes": 80}

def section_decode(torch, F, RES):
    dev = "cuda"
    a = torch.zeros(16, device=dev)
    RES["eager_tiny_op_s"] = time_fn(torch, lambda: a.add_(1.0), 2000, warm=50)
    with sdpa_ctx(torch, F, RES):
        A = Model(torch, F, max(BATCHES))
        RES["model"] = dict(layers=L, hidden=H, heads=NH, kv_heads=NKV, head_dim=HD, ffn=FFN, vocab=V, context_tokens=CTX)
        RES["torch_eager"] = {}; RES["torch_cudagraph"] = {}
        pos = torch.tensor([CTX], device=dev)
        graphs = {}
        for b in BATCHES:
            tok = torch.zeros(b, 1, dtype=torch.long, device=dev)
            te = time_fn(torch, lambda: A.step(tok, pos), 10)
            hi = host_issue_time(torch, lambda: A.step(tok, pos), 3)
            graphs[b] = capture(torch, A, b, pos)
            tg = time_fn(torch, lambda: graphs[b].replay(), 20)
            RES["torch_eager"][str(b)] = {"step_s": te, "host_issue_s": hi}
            RES["torch_cudagraph"][str(b)] = {"step_s": tg}
            log("b", b, "eager", te, "issue", hi, "graph", tg)
        try:
            from torch.profiler import profile, ProfilerActivity
            tok = torch.zeros(1, 1, dtype=torch.long, device=dev)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                A.step(tok, pos); torch.cuda.synchronize()
            ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            RES["torch_eager_kernels_per_step"] = len(ev)
        except Exception as e:
            RES.setdefault("errors", {})["profiler"] = repr(e)
        # contention: two model instances on two streams, each replaying its own graph
        Bm = Model(torch, F, 128)
        RES["streams"] = {}
        for b in [1, 32, 128]:
            ga, gb = graphs[b], capture(torch, Bm, b, pos)
            sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
            alone = time_fn(torch, lambda: ga.replay(), 20)
            alone_b = time_fn(torch, lambda: gb.replay(), 20)
            def both():
                with torch.cuda.stream(sa): ga.replay()
                with torch.cuda.stream(sb): gb.replay()
            tb = time_fn(torch, both, 20)
            RES["streams"][str(b)] = {"alone_step_s": alone, "alone_step_s_b": alone_b, "two_streams_round_s": tb,
                                      "total_speedup": (alone + alone_b) / tb}
            log("streams b", b, alone, alone_b, tb)
        RES["streams_note"] = ("two Model instances (own weights and KV), each replaying its own CUDA graph; "
                               "two_streams_round_s: both graphs launched on two streams, time per round until both finish")

class Model:
    def __init__(self, torch, F, bmax):
        dev = "cuda"; bf = torch.bfloat16
        self.torch, self.F = torch, F
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
        torch, F = self.torch, self.F
        def rmsnorm(x, w):  # unfused, as plain PyTorch writes it
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w
        def rope(x, cos, sin):  # x [B,1,h,hd]
            x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
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

def sdpa_ctx(torch, F, RES):
    import contextlib
    try:
        dev = "cuda"; bf = torch.bfloat16
        q = torch.randn(2, NH, 1, HD, device=dev, dtype=bf); k = torch.randn(2, NKV, 8, HD, device=dev, dtype=bf)
        B = torch.nn.attention.SDPBackend
        with torch.nn.attention.sdpa_kernel([B.FLASH_ATTENTION, B.EFFICIENT_ATTENTION]):
            F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        RES["sdpa"] = "flash/efficient"
        return torch.nn.attention.sdpa_kernel([B.FLASH_ATTENTION, B.EFFICIENT_ATTENTION])
    except Exception as e:
        RES["sdpa"] = "default (" + repr(e)[:120] + ")"
        return contextlib.nullcontext()

def time_fn(torch, fn, n, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter() - t) / n

def host_issue_time(torch, fn, n):  # host time to issue n steps when the queue is not full (no sync inside)
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(n): fn()
    h = (time.perf_counter() - t) / n
    torch.cuda.synchronize(); return h

def capture(torch, m, b, pos):
    tok = torch.zeros(b, 1, dtype=torch.long, device="cuda")
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): m.step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr): m.step(tok, pos)
    gr.static_tok = tok  # keep the static input alive (the first recorded run crashed without this)
    return gr

def section_hf(torch, F, RES):
    # Hugging Face transformers, eager, random weights from a LlamaConfig (no downloads)
    try:
        import transformers
    except Exception as e:
        RES["transformers"] = None
        RES["hf_transformers_missing"] = "import transformers failed: " + repr(e)[:200]
        return
    from transformers import LlamaConfig, LlamaForCausalLM
    dev = "cuda"; bf = torch.bfloat16
    RES["transformers"] = transformers.__version__
    cfg = LlamaConfig(hidden_size=H, intermediate_size=FFN, num_hidden_layers=L, num_attention_heads=NH,
                      num_key_value_heads=NKV, vocab_size=V, max_position_embeddings=8192, rope_theta=500000.0)
    torch.set_default_dtype(bf)
    with torch.device(dev):
        hf = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    hf.eval()
    RES["hf_attn_implementation"] = getattr(hf.config, "_attn_implementation", None)
    log("hf built", RES["hf_attn_implementation"])
    RES["hf_transformers"] = {}
    with torch.inference_mode():
        for b in [1, 8, 32, 128]:
            ids = torch.randint(0, V, (b, CTX), device=dev)
            try:
                out = hf(input_ids=ids, use_cache=True, logits_to_keep=1)
            except TypeError:
                out = hf(input_ids=ids, use_cache=True)
            stt = {'pkv': out.past_key_values, 'nxt': out.logits[:, -1:].argmax(-1)}
            del out
            def st():
                o = hf(input_ids=stt['nxt'], past_key_values=stt['pkv'], use_cache=True)
                stt['pkv'] = o.past_key_values; stt['nxt'] = o.logits[:, -1:].argmax(-1)
            ts = time_fn(torch, st, 10)
            RES["hf_transformers"][str(b)] = {"step_s": ts, "context_tokens_at_first_timed_step": CTX + 3}
            if b == 1:
                try:
                    from torch.profiler import profile, ProfilerActivity
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        st(); torch.cuda.synchronize()
                    RES["hf_kernels_per_step_b1"] = len([e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA])
                except Exception as e:
                    RES.setdefault("errors", {})["hf_profiler"] = repr(e)[:300]
            log("hf b", b, ts)
            del stt; torch.cuda.empty_cache()
    RES["hf_note"] = ("LlamaForCausalLM(LlamaConfig(Llama-3-8B shape)) forward() per decode token with a DynamicCache after a "
                      f"{CTX}-token prefill; 3 warm-up steps then 10 timed (context {CTX + 3}..{CTX + 13}); no generate() loop")

def gpu_time(torch, fns, reps=20, samples=5):
    # Median over `samples` replays of one CUDA graph holding `reps` calls cycling through fns (rotated
    # weights keep repeated calls from hitting L2); falls back to an eager loop if capture fails.
    # A call slower than 2 ms (a slow kernel at large M) gets 2 calls per graph and 3 samples, so the
    # section stays inside its time limit (the first run lost the section to this).
    for f in fns[:2]: f()
    torch.cuda.synchronize()
    t = time.perf_counter(); fns[0](); torch.cuda.synchronize()
    if time.perf_counter() - t > 2e-3: reps, samples = 2, 3
    try:
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for f in fns[:2]: f()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(reps): fns[i % len(fns)]()
        run = g.replay; per = reps; how = "graph"
    except Exception:
        torch.cuda.synchronize()
        def run():
            for i in range(reps): fns[i % len(fns)]()
        per = reps; how = "eager"
    run(); torch.cuda.synchronize()
    ts = []
    for _ in range(samples):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); run(); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e-3 / per)
    ts.sort()
    return ts[len(ts) // 2], how

def section_gemm(torch, F, RES, save):
    # C[M,N] = X[M,K] W: bf16 (cuBLAS), fp8 e4m3 (_scaled_mm, per-tensor scales), int8 (_int_mm),
    # weight-only int8 fused (_weight_int8pack_mm, per-channel scales), weight-only int4 fused
    # (_weight_int4pack_mm = tinygemm, group 128) and weight-only int8 as dequantize-then-GEMM.
    dev = "cuda"; bf = torch.bfloat16
    ROT_BYTES = 256 << 20   # > 4x the 60 MiB L2
    RES["gemm"] = []; RES["gemm_errors"] = {}
    one = torch.ones((), device=dev)
    for (N, K) in [(4096, 4096), (28672, 4096), (4096, 14336)]:
        nrot = lambda nbytes: max(2, math.ceil(ROT_BYTES / nbytes))
        W = [torch.randn(K, N, device=dev, dtype=bf) * 0.02 for _ in range(nrot(2 * K * N))]
        W8 = [torch.randn(N, K, device=dev, dtype=bf).to(torch.float8_e4m3fn).t() for _ in range(nrot(K * N))]  # column-major K x N
        WI = [torch.randint(-127, 127, (N, K), device=dev, dtype=torch.int8) for _ in range(nrot(K * N))]          # [N,K]
        sc = torch.rand(N, device=dev, dtype=bf) * 0.01 + 0.001
        W4 = None
        try:
            inner = 8
            W4 = []
            for _ in range(nrot(K * N // 2)):
                q = torch.randint(0, 256, (N, K // 2), device=dev, dtype=torch.uint8)
                W4.append(torch._convert_weight_to_int4pack(q, inner))
            sz4 = torch.rand(K // 128, N, 2, device=dev, dtype=bf) * 0.01
        except Exception as e:
            RES["gemm_errors"]["w4a16_pack"] = repr(e)[:300]; W4 = None
        for M in [1, 16, 64, 256, 1024, 4096]:
            x = torch.randn(M, K, device=dev, dtype=bf)
            r = {"m": M, "n": N, "k": K}
            def meas(key, fns):
                try:
                    t, how = gpu_time(torch, fns)
                    r[key] = t; r["timing"] = how
                except Exception as e:
                    r[key.replace("_s", "_err")] = repr(e)[:200]
                    torch.cuda.synchronize()
            meas("bf16_s", [lambda w=w: x @ w for w in W])
            x8 = x.to(torch.float8_e4m3fn)
            meas("fp8_s", [lambda w=w: torch._scaled_mm(x8, w, scale_a=one, scale_b=one, out_dtype=bf) for w in W8])
            if M > 16:  # _int_mm needs M > 16
                xi = torch.randint(-127, 127, (M, K), device=dev, dtype=torch.int8)
                meas("int8_s", [lambda w=w: torch._int_mm(xi, w.t()) for w in WI])
            # fused weight-only kernels are GEMV-class: engines switch to dequantize-then-GEMM past a few
            # hundred rows, so they are timed up to M = 256 only
            if M <= 256:
                meas("w8a16_fused_s", [lambda w=w: torch._weight_int8pack_mm(x, w, sc) for w in WI])
            if W4 is not None and M <= 256:
                meas("w4a16_g128_fused_s", [lambda w=w: torch._weight_int4pack_mm(x, w, 128, sz4) for w in W4])
            meas("w8a16_dequant_then_gemm_s", [lambda w=w: (x @ w.t().to(bf)) * sc for w in WI])
            RES["gemm"].append(r)
        # correctness of the fused int8 path against a dequantized reference (one shape, small M)
        try:
            x = torch.randn(4, K, device=dev, dtype=bf)
            ref = (x.double() @ (WI[0].double() * sc.double()[:, None]).t())
            got = torch._weight_int8pack_mm(x, WI[0], sc).double()
            RES.setdefault("gemm_checks", {})[f"w8a16_fused_rel_err_{N}x{K}"] = ((got - ref).norm() / ref.norm()).item()
        except Exception as e:
            RES["gemm_errors"][f"w8a16_check_{N}x{K}"] = repr(e)[:200]
        log("gemm", N, K); save(RES)
        del W, W8, WI, W4; torch.cuda.empty_cache()
    RES["gemm_note"] = ("times are GPU time per call: median of 5 replays of a CUDA graph holding 20 calls over rotated "
                        "weight copies (>= 256 MiB per dtype, > 4x L2). w8a16_fused: torch._weight_int8pack_mm (per-channel "
                        "scales); w4a16_g128_fused: torch._weight_int4pack_mm (tinygemm, group 128, bf16 scales/zeros); "
                        "w8a16_dequant_then_gemm: (x @ w.to(bf16)) * scale, 3 kernels")

def child_proc(rank, barrier, q):
    try:
        import torch, torch.nn.functional as F
        torch.cuda.set_device(0)
        RES = {}
        with sdpa_ctx(torch, F, RES):
            m = Model(torch, F, 32)
            pos = torch.tensor([CTX], device="cuda")
            res = {}
            for b in [1, 32]:
                gr = capture(torch, m, b, pos)
                alone = None
                for turn in range(2):  # each process alone in turn, then both together
                    barrier.wait(timeout=60)
                    if turn == rank: alone = time_fn(torch, lambda: gr.replay(), 20)
                barrier.wait(timeout=60)
                tog = time_fn(torch, lambda: gr.replay(), 40)
                res[str(b)] = {"alone_step_s": alone, "together_step_s": tog}
        q.put((rank, res))
    except Exception:
        q.put((rank, traceback.format_exc()))

def section_processes(torch, F, RES):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn"); barrier = ctx.Barrier(2); q = ctx.Queue()
    ps = [ctx.Process(target=child_proc, args=(r, barrier, q)) for r in range(2)]
    for p in ps: p.start()
    got = {}
    for _ in range(2):
        r, res = q.get(timeout=80); got[str(r)] = res
    for p in ps: p.join(timeout=10)
    RES["processes"] = got

def run_section(name, part):
    import torch, torch.nn.functional as F
    RES = {"errors": {}}
    def save(res):  # partial results, so a later timeout keeps what was measured
        with open(part, "w") as f: json.dump(res, f, indent=1)
    try:
        fn = globals()["section_" + name]
        if name == "gemm": fn(torch, F, RES, save)
        else: fn(torch, F, RES)
    except Exception:
        RES["errors"][name] = traceback.format_exc(); log(RES["errors"][name])
    save(RES)

def main():
    out = sys.argv[1]; name = sys.argv[2] if len(sys.argv) > 2 else "engines_decode.json"
    RES = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": "python3 calibrate/results/h200/bench_engines_decode.py $OUT " + name, "errors": {}}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        RES["nvidia_smi"] = smi
    except Exception as e:
        RES["nvidia_smi"] = repr(e)
    try:
        import torch
        RES["torch"] = torch.__version__; RES["cuda"] = torch.version.cuda
    except Exception as e:
        RES["errors"]["import_torch"] = repr(e)
    def save():
        with open(os.path.join(out, name), "w") as f: json.dump(RES, f, indent=1)
    save()
    only = os.environ.get("BENCH_SECTIONS", " ".join(SECTIONS)).split()
    for sec in only:
        part = os.path.join("/tmp", f"bench_part_{sec}.json")
        if os.path.exists(part): os.remove(part)
        t = time.time()
        limit = int(os.environ.get("BENCH_TIMEOUT_S", SECTIONS[sec]))  # override for a one-section run
        try:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--section", sec, part], timeout=limit)
        except subprocess.TimeoutExpired:
            RES["errors"][sec] = f"timed out after {limit} s (partial results kept)"
        if os.path.exists(part):
            with open(part) as f: got = json.load(f)
            RES["errors"].update(got.pop("errors", {}) or {})
            RES.update(got)
        elif sec not in RES["errors"]:
            RES["errors"][sec] = "child wrote no result (crashed)"
        RES.setdefault("section_wall_s", {})[sec] = time.time() - t
        log("section", sec, "done in", round(time.time() - t, 1), "s")
        save()
    RES["total_wall_s"] = time.time() - T0
    save(); log("done")

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--section":
        run_section(sys.argv[2], sys.argv[3])
    else:
        main()
