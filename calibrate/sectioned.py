"""Driver for GPU measurement scripts that must survive one batch on a lent GPU.

Each named section runs in its own child process (a crash, a sticky CUDA error or a hang loses
only that section), under a hard time limit, and inside one overall budget for the whole
script. A child also gets a soft deadline and stops starting new points when it is past it,
recording what it skipped, so a tight budget costs points, not the section. A child writes
OUT/parts/<section>.json after every flush(); the parent merges all parts into OUT/<file>.json
after each section, with a status line per section (exit code, seconds, limits).

Used by calibrate/quant/measure_quant.py and calibrate/specdec/measure_specdec.py. Only the
standard library here: --dry-run and the plan print without torch.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
import traceback

T0 = time.time()
STARTUP_MARGIN_S = 6.0     # a child's soft deadline ends this long before its hard limit
MIN_SECTION_S = 15.0       # a section is not started with less budget left than this


def log(*a):
    print(f"[{time.time() - T0:7.1f}s]", *a, flush=True)


class Section:
    """fn(torch, F, ctx) measures and fills ctx.res; plan(quick) -> (points, est_s, lines)
    describes the work without torch (for --dry-run); soft_s/hard_s are the section's own
    limits (seconds from the child's start, torch import included)."""

    def __init__(self, fn, plan, soft_s, hard_s, doc):
        self.fn, self.plan, self.soft_s, self.hard_s, self.doc = fn, plan, soft_s, hard_s, doc


class Ctx:
    """What a section function gets: the result dict, quick mode, a soft deadline and flush()."""

    def __init__(self, res, quick, deadline, write):
        self.res, self.quick, self.deadline, self._write = res, quick, deadline, write

    def over(self):
        return time.time() > self.deadline

    def flush(self):
        self._write()

    def error(self, what, exc):
        msg = f"{what}: {exc!r}"[:400]
        self.res.setdefault("errors", []).append(msg)
        log("ERROR", msg[:300])

    def skip(self, what):
        """Record a point not run because the soft deadline passed."""
        self.res.setdefault("skipped_budget", []).append(what)


class SelfTest:
    """PASS/FAIL lines for the CPU self-tests; done() prints the verdict and returns the exit code."""

    def __init__(self):
        self.fails = 0

    def ok(self, name, cond):
        self.fails += 0 if cond else 1
        print(f"{'PASS' if cond else 'FAIL'} {name}")

    def done(self):
        print("all passed" if self.fails == 0 else f"{self.fails} FAILED")
        return 1 if self.fails else 0


def finite(x):
    """JSON without NaN/Infinity (the C++ reader rejects them): non-finite floats become strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(finite(obj), f, indent=None, separators=(",", ":"))
    os.replace(tmp, path)


def nvidia_smi():
    """Read-only query of the GPU's name, driver, clocks and limits (nothing is changed)."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,"
             "memory.total,temperature.gpu", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return repr(e)


def env_info(torch):
    info = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "torch": torch.__version__, "cuda": torch.version.cuda, "nvidia_smi": nvidia_smi()}
    smi = info["nvidia_smi"].split(", ")
    if len(smi) > 1:
        info["driver"] = smi[1]
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        info["triton"] = f"unavailable: {e!r}"[:200]
    p = torch.cuda.get_device_properties(0)
    info["gpu"] = {"name": p.name, "sm_count": p.multi_processor_count, "memory_bytes": p.total_memory,
                   "cc": f"{p.major}.{p.minor}"}
    return info


def run_child(name, sec, out, quick, soft_s, command, schema):
    parts = os.path.join(out, "parts")
    res = {"schema": schema, "section": name, "command": command, "quick": quick, "doc": sec.doc}
    path = os.path.join(parts, name + ".json")

    def write():
        write_json(path, res)

    try:
        import torch
        import torch.nn.functional as F
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            res.update(env_info(torch))
        except Exception as e:  # noqa: BLE001  (no usable GPU: the section itself will say more)
            res.setdefault("errors", []).append(f"env_info: {e!r}"[:400])
        write()
        ctx = Ctx(res, quick, T0 + (soft_s if soft_s is not None else sec.soft_s), write)
        with torch.inference_mode():
            sec.fn(torch, F, ctx)
    except Exception:  # noqa: BLE001
        res.setdefault("errors", []).append(traceback.format_exc()[-1500:])
        log("SECTION ERROR", name, traceback.format_exc()[-800:])
    res["section_s"] = time.time() - T0
    write()
    log("wrote", name, f"{res['section_s']:.1f} s", "errors:", len(res.get("errors", [])),
        "skipped (budget):", len(res.get("skipped_budget", [])))


def summarize(part):
    """Counts for the status line: points, errors, points skipped for the budget, failed checks."""
    checks = part.get("checks", {})
    n_points = sum(len(v) for k, v in part.items() if k == "points" and isinstance(v, list))
    return {"points": n_points, "errors": len(part.get("errors", [])),
            "skipped_budget": len(part.get("skipped_budget", [])),
            "checks_failed": sorted(k for k, v in checks.items() if not v.get("pass"))}


def merge(out, out_file, schema, status, command):
    parts = os.path.join(out, "parts")
    doc = {"schema": schema, "command": command, "status": status, "sections": {}}
    for name in status:
        p = os.path.join(parts, name + ".json")
        if os.path.exists(p):
            with open(p) as f:
                doc["sections"][name] = json.load(f)
            status[name].update(summarize(doc["sections"][name]))
    write_json(os.path.join(out, out_file), doc)


def main(script, doc, schema, out_file, sections, default_budget_s):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output folder: OUT/" + out_file + " and OUT/parts/<section>.json")
    ap.add_argument("--sections", default=",".join(sections), help="comma list (default: all): " + ",".join(sections))
    ap.add_argument("--quick", action="store_true", help="few points per section (smoke test)")
    ap.add_argument("--budget-s", type=float, default=default_budget_s,
                    help=f"wall-time budget for all sections together (default {default_budget_s:.0f})")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and an estimated time; no GPU, no torch")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--soft-s", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--command", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names = [s for s in a.sections.split(",") if s]
    unknown = [s for s in names if s not in sections]
    if unknown:
        print(f"{os.path.basename(script)}: unknown section(s) {', '.join(unknown)} (have: {', '.join(sections)})",
              file=sys.stderr)
        sys.exit(2)
    if not a.budget_s > 0:
        print(f"{os.path.basename(script)}: --budget-s: expected seconds > 0, got {a.budget_s}", file=sys.stderr)
        sys.exit(2)
    if a.child:
        run_child(a.child, sections[a.child], a.out, a.quick, a.soft_s, a.command, schema)
        return
    if a.dry_run:
        total = 0.0
        print(f"plan ({'quick' if a.quick else 'full'}), budget {a.budget_s:.0f} s:")
        for n in names:
            pts, est, lines = sections[n].plan(a.quick)
            est = min(est, sections[n].hard_s)
            total += est
            print(f"  {n}: {pts} timed points, estimated {est:.0f} s (soft {sections[n].soft_s:.0f} s, "
                  f"hard {sections[n].hard_s:.0f} s) - {sections[n].doc}")
            for line in lines:
                print("      " + line)
        print(f"estimated total {total:.0f} s (H100 SXM, child start-up included; an estimate, not a measurement)")
        return
    if not a.out:
        ap.error("--out is required (or --dry-run)")
    os.makedirs(os.path.join(a.out, "parts"), exist_ok=True)
    argv = " ".join(sys.argv[1:]).replace(a.out, "$OUT")
    rel = os.path.relpath(os.path.abspath(script), os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(script)))))
    command = f"python3 {rel} {argv}"
    status = {}
    for n in names:
        sec = sections[n]
        left = a.budget_s - (time.time() - T0)
        if left < MIN_SECTION_S:
            status[n] = {"status": "skipped: budget spent", "budget_left_s": left}
            log("section", n, "skipped: budget spent")
            continue
        hard = min(sec.hard_s, left)
        soft = max(5.0, min(sec.soft_s * (0.6 if a.quick else 1.0), hard - STARTUP_MARGIN_S))
        args = [sys.executable, os.path.abspath(script), "--child", n, "--out", a.out, "--soft-s", str(soft),
                "--command", command] + (["--quick"] if a.quick else [])
        log("section", n, f"start (soft {soft:.0f} s, hard {hard:.0f} s)")
        t = time.time()
        try:
            rc = subprocess.run(args, timeout=hard).returncode
            st = f"rc={rc}"
        except subprocess.TimeoutExpired:
            st = "TIMEOUT (partial results kept)"
        status[n] = {"status": st, "elapsed_s": round(time.time() - t, 1), "soft_s": round(soft, 1),
                     "hard_s": round(hard, 1)}
        merge(a.out, out_file, schema, status, command)
        log("section", n, st, f"{time.time() - t:.1f} s")
    merge(a.out, out_file, schema, status, command)
    bad = 0
    print(f"{'section':22s} {'status':32s} {'s':>6s} {'points':>6s} {'errors':>6s} {'skipped':>7s}  failed checks")
    for n, st in status.items():
        print(f"{n:22s} {st['status'][:32]:32s} {st.get('elapsed_s', 0):6.1f} {st.get('points', 0):6d} "
              f"{st.get('errors', 0):6d} {st.get('skipped_budget', 0):7d}  {' '.join(st.get('checks_failed', []))}")
        bad += st["status"] != "rc=0" or st.get("errors", 0) > 0 or bool(st.get("checks_failed"))
    print(f"total {time.time() - T0:.1f} s -> {os.path.join(a.out, out_file)}")
    sys.exit(1 if bad else 0)


# ----------------------------------------------------------------------------------------------
# GPU-side helpers (torch is passed in; the timing primitives are calibrate/independent/measure.py's)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "independent"))
import measure  # noqa: E402  (stdlib-only at import: event_median, capture, load_card)

load_card = measure.load_card


def graph_time(torch, calls, min_sample_s=2e-4, max_gpu_s=0.1):
    """GPU time of one call, as measure.graph_time_per_call and calibrate/src/common.cu take it:
    K back-to-back calls (cycling over `calls`, which rotate their operands) captured in one CUDA
    graph; the median replay over K. Slow calls get fewer replays (3 to 10) so that one point
    costs about max_gpu_s of GPU time. Returns (seconds per call, K, replays)."""
    n = len(calls)
    for c in calls[: min(n, 2)]:
        c()
    torch.cuda.synchronize()
    est, _, _ = measure.event_median(torch, lambda: [c() for c in calls], 0, 2)
    per = max(est / n, 1e-7)
    k = min(max(n, int(math.ceil(min_sample_s / per))), 4096)
    replays = int(min(10, max(3, max_gpu_s / (k * per))))
    seq = [calls[i % n] for i in range(k)]
    g = measure.capture(torch, lambda: [c() for c in seq], warm=1)
    med, _, _ = measure.event_median(torch, g.replay, 1, replays)
    del g
    return med / k, k, replays


def rel_err(torch, got, ref):
    """||got - ref|| / ||ref|| in float64; NaN when got has a non-finite element (never passes)."""
    got, ref = got.double(), ref.double()
    if not bool(torch.isfinite(got).all()):
        return float("nan")
    return float((got - ref).norm() / ref.norm())


def check(torch, ctx, name, got, ref, tol, **extra):
    """Record a correctness check under res['checks'][name] and log it."""
    err = rel_err(torch, got, ref)
    ok = err <= tol  # False for NaN
    ctx.res.setdefault("checks", {})[name] = dict({"rel_err": err, "tol": tol, "pass": ok}, **extra)
    log(f"check {name}: rel_err {err:.2e} (tol {tol:.0e}) {'PASS' if ok else 'FAIL'}")
    return ok
