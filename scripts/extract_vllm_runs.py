#!/usr/bin/env python3
"""Writes data/validation/vllm_v1_runs.json: the figures servesim's vLLM V1 validation uses from
the public repository inference-sim/training (vLLM 0.15.1 on H100, inference-perf load stages).

The repository states no license, so no file of it is copied: this script reads a local clone and
keeps, per run, the server settings, the load generator's settings and the measured aggregates
(counts, rates, lengths and latency percentiles), each with the path it came from.

  python3 scripts/extract_vllm_runs.py CLONE_OF_inference-sim_training COMMIT > data/validation/vllm_v1_runs.json
"""
import json
import os
import sys

# split.py of the repository: 13 active experiments and 3 overloaded ones (> 10% failures).
PCTS = ["median", "p90", "p99", "mean"]


def stats(d):
    return {k: d[k] for k in PCTS if k in d and d[k] is not None}


def main():
    root, commit = sys.argv[1], sys.argv[2]
    base = os.path.join(root, "default_args")
    runs = []
    for name in sorted(os.listdir(base)):
        d = os.path.join(base, name)
        cfg = {}
        for line in open(os.path.join(d, "exp-config.yaml")):
            if ":" in line:
                k, v = line.split(":", 1)
                cfg[k.strip()] = v.strip()
        prof = json.load(open(os.path.join(d, "profile.yaml")))
        parsed = open(os.path.join(d, "results", "config.yaml")).read()
        sp = prof["data"]["shared_prefix"]
        stages = []
        i = 0
        while os.path.exists(os.path.join(d, "results", f"stage_{i}_lifecycle_metrics.json")):
            m = json.load(open(os.path.join(d, "results", f"stage_{i}_lifecycle_metrics.json")))
            s, lat = m["successes"], m["successes"]["latency"]
            stages.append({
                "path": f"default_args/{name}/results/stage_{i}_lifecycle_metrics.json",
                "rate_per_s": prof["load"]["stages"][i]["rate"], "duration_s": prof["load"]["stages"][i]["duration"],
                "achieved_rate_per_s": m["load_summary"]["achieved_rate"],
                "successes": s["count"], "failures": m["failures"]["count"],
                "prompt_len": stats(s["prompt_len"]) | {"min": s["prompt_len"]["min"], "max": s["prompt_len"]["max"],
                                                        "p10": s["prompt_len"]["p10"]},
                "output_len_retokenised": stats(s["output_len"]),
                "ttft_s": stats(lat["time_to_first_token"]),
                "tpot_reported_s": stats(lat["time_per_output_token"]),
                "e2e_s": stats(lat["request_latency"]),
                "output_tokens_per_s": s["throughput"]["output_tokens_per_sec"],
            })
            i += 1
        runs.append({
            "id": name, "model_id": cfg["model"], "tensor_parallel_size": int(cfg["tensor_parallelism"]),
            "max_model_len": int(cfg["max_model_len"]), "max_num_batched_tokens": int(cfg["max_num_batched_tokens"]),
            "max_num_seqs": int(cfg["max_num_seqs"]),
            "load_generator": {
                # results/config.yaml is the configuration inference-perf parsed: its shared_prefix
                # block shows the defaults it ran with (the profile's own key names were not known to it).
                "num_groups": int(parsed.split("num_groups:")[1].split()[0]),
                "num_prompts_per_group": int(parsed.split("num_prompts_per_group:")[1].split()[0]),
                "system_prompt_len": sp["system_prompt_len"], "question_len": sp["question_len"],
                "output_len": sp["output_len"], "ignore_eos": prof["server"]["ignore_eos"],
                "load_type": prof["load"]["type"], "streaming": prof["api"]["streaming"], "api": prof["api"]["type"]},
            "stages": stages,
        })
    out = {
        "schema": "servesim-vllm-runs/1",
        "source": f"https://github.com/inference-sim/training at commit {commit} (no license stated: figures only, no files copied)",
        "written_by": "scripts/extract_vllm_runs.py",
        "runs": runs,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
