#!/usr/bin/env python3
"""Study 10 (docs/studies/10_speculative.md): where speculative decoding stops paying.

Runs `servesim sweep` on scenarios/studies/10_speculative_batch.json (every request at once, at most
engine.max_num_seqs running) and scenarios/speculative.json (Poisson arrivals), with speculation
off (engine.speculative.method=none) and on, and prints markdown:
  1. the speed-up (output tokens/s with speculation over without) against batch size for
     Llama-3.1-8B (one H100) and Llama-3-70B (TP4), EAGLE k = 3, beside the speed-ups SpecDecode-Bench
     measured with vLLM on H100 (Liu et al., 'Speculative Decoding: Performance or Illusion?',
     arXiv 2601.11580, Figure 1 (c) and (g): ShareGPT, EAGLE, k = 3; read off the figure, +-0.02);
  2. the same speed-up over k in {1, 3, 7} and acceptance in {0.4, 0.62, 0.8} (Llama-3.1-8B);
  3. TPOT p50 against the arrival rate, off and on: the load at which speculation stops paying.
Usage: python3 scripts/speculative_study.py [SERVESIM] > docs/studies/10_speculative.md
"""
import csv
import os
import subprocess
import sys
import tempfile

B = sys.argv[1] if len(sys.argv) > 1 else "build/servesim"
BATCH = "scenarios/studies/10_speculative_batch.json"
LOAD = "scenarios/speculative.json"
BATCHES = [1, 16, 64, 128, 256]
# Read off SpecDecode-Bench's Figure 1 (EAGLE, ShareGPT, k = 3, vLLM v0.10.1, H100): batch -> speed-up.
PUBLISHED = {"llama-3.1-8b": {1: 1.67, 16: 1.66, 64: 1.53, 128: 1.29}, "llama-3-70b": {1: 1.96, 16: 1.77, 64: 1.50, 128: 1.06}}
SEVENTY = ["--set", "model=llama-3-70b", "--set", "parallel.tensor_parallel_size=4", "--set", "engine.max_model_len=8192",
           "--set", "workload.output_tokens.max_tokens=4096"]


def sweep(scenario, args, grids, metrics):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.csv")
        cmd = [B, "sweep", scenario, *args, "--metrics", ",".join(metrics)]
        for g in grids:
            cmd += ["--grid", g]
        subprocess.run(cmd + ["--csv", out], check=True, stdout=subprocess.DEVNULL)
        return list(csv.DictReader(open(out))), " ".join(["build/servesim"] + cmd[1:])


def speedups(scenario, args, grids):
    """(key -> {batch: speed-up}), the commands run."""
    batch = "engine.max_num_seqs=" + ",".join(map(str, BATCHES))
    tps = "throughput.output_tokens_per_s"
    base, c1 = sweep(scenario, args + ["--set", "engine.speculative.method=none"], [batch], [tps])
    base_tps = {r["engine.max_num_seqs"]: float(r[tps]) for r in base}
    on, c2 = sweep(scenario, args, [batch] + grids, [tps, "speculative.tokens_per_step"])
    keys = [g.split("=")[0] for g in grids]
    out = {}
    for r in on:
        key = tuple(r[k] for k in keys)
        out.setdefault(key, {})[int(r["engine.max_num_seqs"])] = float(r[tps]) / base_tps[r["engine.max_num_seqs"]]
    return out, [c1, c2]


def main():
    print("# 10. Speculative decoding: the speed-up against batch size and load\n")
    print("Written by `python3 scripts/speculative_study.py` (from `scenarios/studies/run.sh`); predictions, not measurements.")
    print("Speed-up: output tokens/s with speculation over the same run without (`engine.speculative.method=none`).\n")
    print("## Against SpecDecode-Bench (vLLM on H100, ShareGPT, EAGLE, k = 3)\n")
    print("servesim: EAGLE head at its default acceptance 0.62 (the same study's per-token data for Llama-3.1-8B; assumed for")
    print("Llama-3-70B, whose EAGLE acceptance the study does not publish). Published: arXiv 2601.11580 Figure 1 (c), (g),")
    print("read off the plot (+-0.02). Nothing is fitted to these speed-ups.\n")
    print("| model | batch | servesim | published | error |\n| --- | --- | --- | --- | --- |")
    cmds = []
    for model, args in (("llama-3.1-8b", []), ("llama-3-70b", SEVENTY)):
        s, c = speedups(BATCH, args, ["engine.speculative.num_speculative_tokens=3"])
        cmds += c
        for b in BATCHES:
            pub = PUBLISHED[model].get(b)
            mine = s[("3",)][b]
            err = f"{100 * (mine - pub) / pub:+.1f}%" if pub else ""
            print(f"| {model} | {b} | {mine:.2f} | {pub if pub else '-'} | {err} |")
    print("\n## Over k and acceptance (Llama-3.1-8B, one H100): the batch at which speculation stops paying\n")
    grid = ["engine.speculative.num_speculative_tokens=1,3,7", "engine.speculative.acceptance_rate=0.4,0.62,0.8"]
    s, c = speedups(BATCH, [], grid)
    cmds += c
    print("| k | acceptance | " + " | ".join(f"batch {b}" for b in BATCHES) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in BATCHES) + " |")
    for (k, a), row in sorted(s.items(), key=lambda kv: (int(kv[0][0]), float(kv[0][1]))):
        print(f"| {k} | {a} | " + " | ".join(f"{row[b]:.2f}" for b in BATCHES) + " |")
    print("\n## Against load (scenarios/speculative.json: Llama-3.1-8B, one H100, vLLM V1, Poisson): TPOT p50 in ms\n")
    rates = [2, 4, 8, 12, 16, 20, 24, 28, 32]
    tpot = "latency.tpot_s.p50"
    rate_grid = "workload.arrival.rate_per_s=" + ",".join(map(str, rates))
    base, c1 = sweep(LOAD, ["--set", "engine.speculative.method=none", "--set", "workload.num_requests=3000"], [rate_grid], [tpot])
    on, c2 = sweep(LOAD, ["--set", "workload.num_requests=3000"], [rate_grid] + grid[:1] + ["engine.speculative.acceptance_rate=0.4,0.62"],
                   [tpot])
    cmds += [c1, c2]
    print("| drafting | " + " | ".join(f"{r} req/s" for r in rates) + " | stops paying |")
    print("| --- | " + " | ".join("---" for _ in rates) + " | --- |")
    off = {float(r["workload.arrival.rate_per_s"]): float(r[tpot]) for r in base}
    print("| off | " + " | ".join(f"{1e3 * off[r]:.1f}" for r in rates) + " | |")
    table = {}
    for r in on:
        table.setdefault((r["engine.speculative.num_speculative_tokens"], r["engine.speculative.acceptance_rate"]), {})[
            float(r["workload.arrival.rate_per_s"])] = float(r[tpot])
    for (k, a), row in sorted(table.items(), key=lambda kv: (int(kv[0][0]), float(kv[0][1]))):
        worse = [r for r in rates if row[r] > off[r]]
        stop = f"{worse[0]} req/s" if worse else f"above {rates[-1]} req/s"
        print(f"| k {k}, acceptance {a} | " + " | ".join(f"{1e3 * row[r]:.1f}" for r in rates) + f" | {stop} |")
    print("\nCommands:\n\n```sh")
    for c in cmds:
        print(c)
    print("```")


if __name__ == "__main__":
    main()
