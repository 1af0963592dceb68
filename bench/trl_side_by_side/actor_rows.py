#!/usr/bin/env python3
"""The actor with every response at full length vs one response ended early (issue 8, benchmark 3's slow steps);
prints JSON.

On the H200 the steps in which one of 256 responses ended before 256 tokens took 0.9-1.5 s of
old log-probs and 2.7-3.9 s of update, against 0.36-0.44 s and 1.7-2.0 s when every response ran to 256 tokens. On the
CPU the actor's path is the same for both (README, "Result"): the same micro-batches, the same shapes, the same
SDPA call (a 4-D boolean mask in both: the left-padded prompts always need one). This script times that path on the GPU,
outside the trainer, so that the rows are the only thing that changes:

- `rows`: `Actor.logprobs` and one `Actor.update` (4 mini-batches of 64 rows, as the benchmark) on a rollout with the
  prompt lengths of the benchmark's step 2 and step 4 (TRL's questions, seed 42: `STEP_PROMPT_LENS`) and random tokens,
  every response 256 tokens (`full`) or row 0's response ended at 79 tokens (`short`, as step 2's one early end). Each
  shape is run once before the timed reps (first calls build cuDNN graphs), then `--reps` alternating rounds (full,
  short / short, full). With `--profile`, one profiled round per variant: GPU-busy seconds (union of kernel times)
  against wall seconds, and the kernels that took the most time.
- `lengths`: the padded length L = prompt + 256 at each value of 331..336 (the benchmark's micro-batches vary in L from
  step to step; one prompt is 6 tokens shorter, so the mask stays): the first call of a new L, then the repeats. Last,
  L = 336 with no padding at all, where transformers drops the mask and SDPA runs causal without one (flash on CUDA):
  what the mask costs.
- `backends` (CUDA only): `rows` for step 2 under each SDPA backend that takes a mask (efficient, cuDNN), one round.

Each timing is wall seconds with `torch.cuda.synchronize()` on both sides. `sdpa` lists every distinct SDPA call the
actor made (q shape, mask shape and dtype, is_causal) with the backend `torch._fused_sdp_choice` picks for it.

    python bench/trl_side_by_side/actor_rows.py --tiny                 # CPU smoke run (tiny model, 16-token responses)
    python3 bench/trl_side_by_side/actor_rows.py --json-out OUT.json   # GPU: the 0.5B architecture in bf16
"""

import os
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse, json, shutil, statistics, subprocess, sys, tempfile, time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ours  # noqa: E402  (the benchmark's model config: ARCH, TINY_ARCH, QWEN2_COMMON)

# Prompt token lengths of the benchmark's batches (32 prompts a step), as `ours.py` makes them: TRL's
# `build_rows(512, 42)` encoded with the gsm8k recipe's prompt, rows picked by `batch_indices(512, 32, step, seed=42)`.
STEP_PROMPT_LENS = {
    1: [75, 74, 73, 79, 67, 75, 74, 74, 74, 68, 77, 75, 73, 73, 72, 68, 75, 77, 69, 75, 75, 73, 68, 76, 78, 76, 75, 71,
        74, 75, 69, 79],
    2: [73, 75, 77, 73, 73, 69, 80, 78, 74, 76, 75, 68, 77, 74, 80, 73, 73, 74, 75, 75, 68, 74, 80, 75, 73, 75, 74, 74,
        79, 68, 69, 75],
    3: [69, 74, 76, 75, 68, 67, 78, 75, 75, 73, 72, 67, 75, 68, 72, 74, 74, 67, 67, 78, 76, 75, 74, 77, 71, 74, 74, 75,
        75, 80, 68, 75],
    4: [74, 75, 75, 75, 74, 74, 76, 78, 79, 78, 74, 75, 68, 75, 70, 74, 75, 73, 74, 74, 78, 78, 75, 75, 74, 79, 71, 75,
        77, 72, 74, 75],
    5: [74, 74, 67, 72, 71, 74, 74, 78, 73, 76, 74, 74, 76, 75, 72, 72, 80, 73, 75, 73, 73, 77, 73, 74, 75, 76, 73, 75,
        69, 74, 75, 75]}
PAD, EOS = 151643, 151645   # Qwen2.5's <|endoftext|> (the pad) and <|im_end|> (the end of turn)
# --tiny: a small vocabulary (pad and end of turn are its last ids), so the CPU smoke run is quick
TINY_VOCAB = 4096

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true",
                   help="tiny model (h128, 2 layers) in fp32 on the CPU, 4 prompts, 16-token responses")
    p.add_argument("--steps", default="2,4", help="benchmark steps whose prompt lengths the `rows` rollouts take")
    p.add_argument("--reps", type=int, default=3, help="timed rounds per step in `rows`")
    p.add_argument("--short-len", type=int, default=79,
                   help="response tokens of the one row that ends early (with its end-of-turn token)")
    p.add_argument("--fp32", choices=["on", "off"], default="off",
                   help="model.fp32_logits and model.fp32_residual (off: as in the H200 runs, which predate both)")
    p.add_argument("--sections", default="rows,lengths,backends", help="which sections to run")
    p.add_argument("--profile", action="store_true", help="one profiled round per variant in `rows`")
    p.add_argument("--json-out", default=None, help="also write the JSON to this file")
    return p.parse_args(argv)

def sync():
    import torch
    if torch.cuda.is_available(): torch.cuda.synchronize()

def timed(fn)->tuple[float, object]:
    "Wall seconds of `fn()` with the device synchronised before and after, and its result."
    sync(); t = time.perf_counter(); out = fn(); sync()
    return round(time.perf_counter() - t, 4), out

def gpu_state()->str|None:
    """SM clock (MHz), power (W), temperature (C) and active clock-throttle reasons right now, from nvidia-smi (None
    without it)."""
    try:
        return subprocess.run(["nvidia-smi",
                               "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                               "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError): return None

def build_actor(a, device):
    """The benchmark's policy as the trainer builds it (load_model, activation checkpointing, `Actor`), from a random
    checkpoint."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from omni_gspo.actor import Actor
    from omni_gspo.config import build_config
    from omni_gspo.fsdp import checkpoint_layers
    from omni_gspo.model import adapter_for, load_model
    from omni_gspo.lora import configure_trainable
    dtype = "float32" if a.tiny else "bfloat16"
    ckpt = Path(tempfile.mkdtemp(prefix="actor_rows_"))
    torch.manual_seed(42)
    common = ours.QWEN2_COMMON | ({"vocab_size": TINY_VOCAB, "bos_token_id": TINY_VOCAB - 3,
                                   "pad_token_id": TINY_VOCAB - 3, "eos_token_id": TINY_VOCAB - 1} if a.tiny else {})
    Qwen2ForCausalLM(Qwen2Config(**common, **(ours.TINY_ARCH if a.tiny else ours.ARCH))) \
        .to(getattr(torch, dtype)).save_pretrained(ckpt)
    fp32 = a.fp32 == "on" and not a.tiny
    ov = {"model.path": str(ckpt), "model.dtype": dtype, "model.lora_rank": 0, "model.fp32_logits": fp32,
          "model.fp32_residual": fp32, "hardware.device": "cpu" if a.tiny else "gpu", "rollout.n": 8,
          "actor.ppo_mini_batch_size": 8, "actor.optim.lr": 1e-6, "actor.activation_checkpointing": True,
          "actor.ppo_max_token_len_per_gpu": 32768}
    if a.tiny: ov.pop("model.fp32_logits"); ov.pop("model.fp32_residual")   # fp32 model: the keys are refused as inert
    cfg = build_config("gsm8k", ov)
    model = configure_trainable(load_model(ckpt, dtype, device, cfg.model.attn_implementation, cfg.model.fp32_logits,
                                           cfg.model.fp32_residual), cfg.model)
    checkpoint_layers(model)
    actor = Actor(model, cfg.actor, cfg.algorithm, adapter_for(ckpt))
    shutil.rmtree(ckpt)                              # loaded: the folder is not needed any more
    return actor, cfg

def rollout(prompt_lens:list[int], n:int, R:int, short:int|None, vocab:int, device, seed:int=0):
    """A rollout of `n` rows per prompt: left-padded prompts, random responses of `R` tokens; with `short`, row 0 ends
    after `short` tokens."""
    import torch
    from omni_gspo.rollout import Rollout
    g, pad, eos = torch.Generator().manual_seed(seed), *((PAD, EOS) if vocab > EOS else (vocab - 3, vocab - 1))
    lens = [p for p in prompt_lens for _ in range(n)]
    N, P = len(lens), max(lens)
    pm = (torch.arange(P)[None] >= P - torch.tensor(lens)[:, None]).long()
    pid = torch.randint(0, pad, (N, P), generator=g).masked_fill(pm == 0, pad)
    rid, rm = torch.randint(0, pad, (N, R), generator=g), torch.ones(N, R, dtype=torch.long)
    if short is not None:
        rid[0, short - 1] = eos
        rm[0, short:] = 0
    rid = rid.masked_fill(rm == 0, pad)
    t = lambda x: x.to(device)
    return Rollout(t(pid), t(pm), t(rid), t(rm), t(torch.zeros(N, R)),
                   ["stop" if short is not None and i == 0 else "length" for i in range(N)],
                   t(torch.arange(len(prompt_lens)).repeat_interleave(n)))

class SdpaCalls:
    """Within: every distinct SDPA call (q shape, mask, is_causal) with the backend `torch._fused_sdp_choice` picks for
    it."""
    def __enter__(self):
        import torch, torch.nn.functional as F
        from torch.nn.attention import SDPBackend
        self.seen, self.F, self.orig = {}, F, F.scaled_dot_product_attention
        def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
            key = (tuple(q.shape),
                   None if attn_mask is None else (tuple(attn_mask.shape), str(attn_mask.dtype).replace("torch.", "")),
                   bool(is_causal), bool(enable_gqa))
            if key not in self.seen:
                try:
                    self.seen[key] = SDPBackend(torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal,
                                                                        scale=scale, enable_gqa=enable_gqa)).name
                except Exception as e: self.seen[key] = f"? {type(e).__name__}"
            return self.orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                             enable_gqa=enable_gqa)
        F.scaled_dot_product_attention = spy
        return self
    def __exit__(self, *exc): self.F.scaled_dot_product_attention = self.orig
    def report(self)->list[dict]:
        return [{"q": list(q), "mask": None if m is None else {"shape": list(m[0]), "dtype": m[1]}, "is_causal": c,
                 "enable_gqa": g, "backend": b}
                for (q, m, c, g), b in self.seen.items()]

def profiled(fn)->dict:
    """Wall seconds of `fn()` under the profiler, the GPU-busy seconds in it (union of kernel intervals) and the 8
    kernels with the most time."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    cuda = torch.cuda.is_available()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        wall, _ = timed(fn)
    if not cuda: return {"wall_s": wall}
    try: return {"wall_s": wall, **kernel_summary(prof)}
    except Exception as e: return {"wall_s": wall, "error": f"{type(e).__name__}: {e}"[:300]}

def kernel_summary(prof)->dict:
    """GPU-busy seconds (union of kernel intervals), the kernel count and the 8 kernels with the most time, from a
    finished profile."""
    import torch
    ks = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    spans, busy, end = sorted((e.time_range.start, e.time_range.end) for e in ks), 0.0, float("-inf")
    for s, e in spans:
        if e > end: busy += e - max(s, end); end = e
    tot = {}
    for e in ks: tot[e.name] = tot.get(e.name, 0.0) + e.time_range.elapsed_us()
    top = sorted(tot.items(), key=lambda kv: -kv[1])[:8]
    return {"gpu_busy_s": round(busy / 1e6, 4), "kernels": len(ks),
            "top_kernels_s": {k[:90]: round(v / 1e6, 4) for k, v in top}}

def step_fns(actor, ro, n:int):
    """Old log-probs and one update (every mini-batch) of `ro`, as the trainer calls them; the advantages are fixed
    random numbers."""
    import torch
    adv = torch.randn(ro.response_ids.shape[0], generator=torch.Generator().manual_seed(1)).to(ro.response_ids.device)
    old = {}
    def lp(): old["v"] = actor.logprobs(ro); return old["v"]
    def upd(): return actor.update(ro, adv, old["v"], n)
    return lp, upd

def section_rows(a, actor, device, vocab, R, prompts, n):
    out = {}
    for step in [int(s) for s in a.steps.split(",")]:
        lens = STEP_PROMPT_LENS[step][:prompts]
        ros = {"full": rollout(lens, n, R, None, vocab, device),
               "short": rollout(lens, n, R, min(a.short_len, R - 1), vocab, device)}
        fns = {k: step_fns(actor, ro, n) for k, ro in ros.items()}
        # new shapes (cuDNN graphs and the like): the same for both variants
        first = [timed(f)[0] for f in fns["full"]]
        res = {v: {"logprobs_s": [], "update_s": []} for v in ros}
        gpu = []
        for r in range(a.reps):
            for v in (("full", "short") if r % 2 == 0 else ("short", "full")):
                lp, upd = fns[v]
                res[v]["logprobs_s"].append(timed(lp)[0]); res[v]["update_s"].append(timed(upd)[0])
            gpu.append(gpu_state())
        for v in res:
            for k in ("logprobs_s", "update_s"):
                res[v][k.replace("_s", "_median_s")] = round(statistics.median(res[v][k]), 4)
        if a.profile:
            for v, (lp, upd) in fns.items(): res[v]["profile"] = {"logprobs": profiled(lp), "update": profiled(upd)}
        calls = {}
        for v, (lp, upd) in fns.items():
            with SdpaCalls() as c: lp(); upd()
            calls[v] = c.report()
        out[f"step{step}"] = {"prompt_len_max": max(lens), "rows": len(lens) * n, "first_call_s": first, **res,
                              "gpu_state": gpu, "sdpa": calls["full"],
                              "sdpa_same_for_short": calls["full"] == calls["short"]}
    return out

def section_lengths(a, actor, device, vocab, R, prompts, n):
    """Padded lengths L = 75..80 + R: every prompt that long but the first (6 shorter, so the mask stays); then L = 80 +
    R without any padding."""
    out = {}
    for p in list(range(75, 81)) + [None]:
        lens = [80] * prompts if p is None else [p - 6] + [p] * (prompts - 1)
        lp, upd = step_fns(actor, rollout(lens, n, R, None, vocab, device), n)
        with SdpaCalls() as c: lp()
        out[f"L{max(lens) + R}" + ("_no_padding" if p is None else "")] = {
            "logprobs_s": [timed(lp)[0] for _ in range(3)], "update_s": [timed(upd)[0] for _ in range(2)],
            "sdpa": c.report()[:1], "gpu_state": gpu_state()}
    return out

def section_backends(a, actor, device, vocab, R, prompts, n):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if not torch.cuda.is_available(): return {"skipped": "no CUDA device"}
    lens, out = STEP_PROMPT_LENS[2][:prompts], {}
    for name in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        res = {}
        try:
            with sdpa_kernel(getattr(SDPBackend, name)):
                for v, short in (("full", None), ("short", min(a.short_len, R - 1))):
                    lp, upd = step_fns(actor, rollout(lens, n, R, short, vocab, device), n)
                    timed(lp); timed(upd)                      # first calls under this backend
                    res[v] = {"logprobs_s": timed(lp)[0], "update_s": timed(upd)[0]}
        except Exception as e: res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        out[name] = res
    return out

def main(argv=None):
    a = parse_args(argv)
    t0 = time.perf_counter()
    import torch, transformers
    device = torch.device("cpu" if a.tiny or not torch.cuda.is_available() else "cuda")
    actor, cfg = build_actor(a, device)
    vocab, R, prompts, n = ((TINY_VOCAB if a.tiny else ours.QWEN2_COMMON["vocab_size"]), (16 if a.tiny else 256),
                            (4 if a.tiny else 32), 8)
    # AdamW state, first kernels
    warm = [timed(f)[0] for f in step_fns(actor, rollout(STEP_PROMPT_LENS[4][:prompts], n, R, None, vocab, device), n)]
    result = {"bench": "actor_rows", "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
              "tiny": a.tiny, "torch": torch.__version__, "transformers": transformers.__version__,
              "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
              "dtype": cfg.model.dtype, "fp32_logits": cfg.model.fp32_logits, "fp32_residual": cfg.model.fp32_residual,
              "response_len": R, "rows": prompts * n, "short_row_len": min(a.short_len, R - 1), "warmup_s": warm}
    sections = {"rows": section_rows, "lengths": section_lengths, "backends": section_backends}
    for s in a.sections.split(","):
        result[s] = sections[s](a, actor, device, vocab, R, prompts, n)
    result["script_s"] = round(time.perf_counter() - t0, 1)
    line = json.dumps(result)
    if a.json_out: Path(a.json_out).write_text(line + "\n")
    print(line, flush=True)
    return result

if __name__ == "__main__": main()
