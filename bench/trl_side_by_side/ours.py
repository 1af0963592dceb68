#!/usr/bin/env python3
"""Our GSPO trainer on TRL's GSPO benchmark (issue 8, benchmark 3), with the settings of `bench_trl.py`.

`bench_trl.py` (a peer benchmark script, copied into .carry/ by prepare.sh from the folder it is given) trains
TRL 1.16's GRPOTrainer in GSPO mode on a random bf16 Qwen2.5-0.5B-architecture model. This script builds the same model
(same config, seed, dtype) and tokenizer into a checkpoint folder, writes the same arithmetic questions (TRL's own
generator, imported from bench_trl.py) as a gsm8k-format parquet (question, answer '#### N'), and runs
`omni_gspo.trainer.train` in this process:

TRL (bench_trl.py) → ours:
- num_generations 8 → rollout.n=8
- steps_per_generation 4 × 64 completions = 256 → data.train_batch_size=32 prompts × 8,
  actor.ppo_mini_batch_size=8 (4 updates)
- max_completion_length 256, min_new_tokens 256 → rollout.response_length=256 (no forced length: EOS may end a response)
- gradient_checkpointing, lr 1e-6, bf16, sdpa → actor.activation_checkpointing=true, actor.optim.lr=1e-6,
  model.dtype=bfloat16, sdpa
- full, or --lora: r32/α64 on q,k,v,o → model.lora_rank=0, or 32 with model.lora_alpha=64 on q,k,v,o
- GSPO clip 3e-4 / 4e-4, beta 0 → algorithm.policy_loss=gspo (default), clip 3e-4 / 4e-4, kl_coef 0

One of our steps is one of TRL's generation cycles: 256 completions, then 4 optimizer steps. TRL times its steps after 2
warm-up optimizer steps, a window of 8 optimizer steps holding 2 generations (512 completions); here the window is the
steps after `--warmup` (default 1: the step holding the first generation and the compile of the decode step), by default
2 steps = the same 512 completions and 8 optimizer steps. Step ends are stamped when the step's line lands in
metrics.jsonl (a thread polling the file, the counterpart of TRL's `on_step_end` callback), so the window's wall time
holds everything the trainer does between steps. tokens_per_s = generated completion tokens in the window / window
seconds, as in bench_trl.py. Prints one JSON line (also written with --json-out).

    python3 bench/trl_side_by_side/ours.py [--lora] [--engine hf|vllm] --json-out ours_full.json   # GPU
    python bench/trl_side_by_side/ours.py --tiny                                                   # CPU smoke run
"""

import os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse, importlib.util, json, math, statistics, tempfile, threading, time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lora", action="store_true",
                   help="LoRA r=32, alpha=64 on q,k,v,o instead of full-parameter training")
    p.add_argument("--tiny", action="store_true",
                   help="TRL's --tiny batch (8 prompts × 4, 32 tokens), a tiny model (h128, 2 layers), on the CPU")
    p.add_argument("--engine", choices=["hf", "vllm"], default="hf", help="rollout.engine")
    p.add_argument("--steps", type=int, default=3, help="training steps (one step = 256 completions and 4 updates)")
    p.add_argument("--warmup", type=int, default=1, help="first steps left out of the timed window")
    p.add_argument("--seed", type=int, default=42, help="model init, TRL's question generator and trainer.seed")
    p.add_argument("--trl-dir", default=str(HERE / ".carry"),
                   help="folder with bench_trl.py and tokenizer/ (prepare.sh)")
    p.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "trl_side_by_side"),
                   help="checkpoint, data and run folders")
    p.add_argument("--json-out", default=None, help="also write the result JSON to this file")
    p.add_argument("--profile", action="store_true",
                   help="run every step after the warm-up under torch.profiler, with a device sync after the old "
                   "log-probs and after the update; per step: their wall and device time, the heaviest kernels and "
                   "host ops (Python's gc passes and the CUDA allocator's counts are recorded for every step either "
                   "way: gc_per_step, allocator_per_step)")
    p.add_argument("overrides", nargs="*", help="more key=value config overrides, applied last")
    a = p.parse_args(argv)
    if a.steps <= a.warmup: p.error(f"--steps ({a.steps}) must be larger than --warmup ({a.warmup})")
    return a

def trl_bench(trl_dir:Path):
    "TRL's benchmark script as a module, for its question generator (`build_rows`) and nothing else."
    path = trl_dir / "bench_trl.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; run bench/trl_side_by_side/prepare.sh first (or pass --trl-dir)")
    spec = importlib.util.spec_from_file_location("bench_trl", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

# The Qwen2.5-0.5B-Instruct architecture exactly as bench_trl.py builds it (its `main`); for --tiny a shrink like its
# own
# (h64, 4 heads) but with head_dim 64 (h128, 2 heads), which vLLM's CPU attention supports (it refuses head_dim 16).
ARCH = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
            num_key_value_heads=2, max_window_layers=21)
TINY_ARCH = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=2, max_window_layers=2)
QWEN2_COMMON = dict(vocab_size=151936, max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                    tie_word_embeddings=True, hidden_act="silu", initializer_range=0.02, attention_dropout=0.0,
                    use_sliding_window=False, sliding_window=None, bos_token_id=151643, eos_token_id=151645,
                    pad_token_id=151643, use_cache=True)

def build_checkpoint(dest:Path, tokenizer_dir:Path, tiny:bool, seed:int, dtype:str)->Path:
    """A random-init Qwen2 checkpoint (TRL's config, `torch.manual_seed(seed)`, `dtype`) with the Qwen2.5 tokenizer, at
    `dest`."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from omni_gspo.files import atomic_dir
    if (dest / "config.json").is_file(): return dest
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    if tok("Hello world")["input_ids"] != [9707, 1879]:
        raise ValueError(f"{tokenizer_dir}: not the Qwen2.5 tokenizer ('Hello world' should be [9707, 1879])")
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(**QWEN2_COMMON, **(TINY_ARCH if tiny else ARCH))).to(getattr(torch, dtype))
    g = model.generation_config   # as Qwen2.5-0.5B-Instruct's generation_config.json (and bench_trl.py)
    g.eos_token_id, g.pad_token_id, g.bos_token_id = [151645, 151643], 151643, 151643
    with atomic_dir(dest) as tmp:
        model.save_pretrained(tmp); tok.save_pretrained(tmp)
    return dest

def write_questions(path:Path, trl, n:int, seed:int)->Path:
    """TRL's `n` arithmetic questions (its generator and seed) as gsm8k-format rows: the user turn's question, answer
    '#### N'."""
    from omni_gspo.data import write_rows
    rows = [{"question": r["prompt"][-1]["content"], "answer": f"#### {r['answer']}"} for r in trl.build_rows(n, seed)]
    return write_rows(rows, path)

def prompt_lengths(ckpt:Path, data:Path)->list[int]:
    """Token lengths of our prompts for the rows of `data`, encoded as the trainer encodes them (chat template, turn
    opened)."""
    from omni_gspo.data import encode_prompt, read_rows
    from omni_gspo.model import load_tokenizer
    from omni_gspo.tasks.gsm8k import gsm8k_examples
    tok = load_tokenizer(ckpt)
    return [len(encode_prompt(tok, e)[0]) for e in gsm8k_examples(read_rows(data), str(data))]

def overrides(a, ckpt:Path, data:Path, run:Path)->list[str]:
    """The config overrides matching bench_trl.py's settings (`a.tiny`: its --tiny shapes, on the CPU in fp32 as TRL
    there)."""
    prompts, n, mini, length = (8, 4, 2, 32) if a.tiny else (32, 8, 8, 256)
    ov = [f"model.path={ckpt}", f"data.train_file={data}", "data.max_prompt_length=128",
          f"data.train_batch_size={prompts}", f"rollout.n={n}", f"actor.ppo_mini_batch_size={mini}",
          f"rollout.response_length={length}", "actor.optim.lr=1e-6", "actor.activation_checkpointing=true",
          "actor.ppo_max_token_len_per_gpu=32768",   # a mini-batch of 64 rows in one forward, as TRL's 64
          f"model.dtype={'float32' if a.tiny else 'bfloat16'}", f"hardware.device={'cpu' if a.tiny else 'gpu'}",
          f"rollout.engine={a.engine}",
          # gsm8k + a tie-breaker: every update runs (reward.py)
          f"reward.custom_function={HERE / 'reward.py'}:compute_score",
          f"trainer.max_steps={a.steps}", "trainer.test_freq=0", f"trainer.save_freq={a.steps}",
          "trainer.keep_checkpoints=1", f"trainer.output_dir={run}", f"trainer.seed={a.seed}",
          "logging.progress_bar=false", "logging.plot=false", "logging.print_samples=0", "logging.rollout_groups=0"]
    ov += ["model.lora_rank=32", "model.lora_alpha=64",
           "model.target_modules=q_proj,k_proj,v_proj,o_proj"] if a.lora else ["model.lora_rank=0"]
    return ov + list(a.overrides)

class StepClock:
    "Stamp `time.perf_counter()` when each line of a metrics.jsonl appears (polled every `every` s in a thread)."
    def __init__(self, path:Path, every:float=0.002):
        self.path, self.every, self.stamps, self._stop = path, every, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
    def _poll(self):
        try: k = self.path.read_bytes().count(b"\n")
        except FileNotFoundError: k = 0
        if k > len(self.stamps): self.stamps += [time.perf_counter()] * (k - len(self.stamps))
    def _run(self):
        while not self._stop.is_set(): self._poll(); time.sleep(self.every)
    def __enter__(self): self.t0 = time.perf_counter(); self._thread.start(); return self
    def __exit__(self, *exc): self._stop.set(); self._thread.join(); self._poll()

def checkpoint_params(ckpt:Path)->int:
    "Parameters stored in the checkpoint's model.safetensors (shapes read from the header, no tensor loaded)."
    from safetensors import safe_open
    with safe_open(ckpt / "model.safetensors", "pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())

def window_result(metrics:list[dict], stamps:list[float], t0:float, warmup:int, rows_per_step:int)->dict:
    """bench_trl.py's numbers from our steps: the window is the steps after `warmup`, timed from the end of step
    `warmup`."""
    if len(stamps) != len(metrics):
        raise RuntimeError(f"{len(stamps)} step stamps for {len(metrics)} metrics.jsonl lines")
    ends = [t0] + stamps
    win = metrics[warmup:]
    wall = ends[-1] - ends[warmup]
    toks = [m["response_length/mean"] * rows_per_step for m in win]
    lens = [m["response_length/mean"] for m in metrics]
    pick = lambda k, digits=3: [round(m[k], digits) for m in metrics if k in m]
    return {"steps_completed": len(metrics), "warmup_steps_excluded": warmup, "timed_steps": len(win),
            "total_wall_s": round(wall, 3), "step_s": [round(b - a, 3) for a, b in zip(ends, ends[1:])],
            "inside_step_s": pick("timing_s/step"), "gen_s": pick("timing_s/gen"), "reward_s": pick("timing_s/reward"),
            "old_log_prob_s": pick("timing_s/old_log_prob"), "update_s": pick("timing_s/update"),
            "completions_in_window": rows_per_step * len(win), "gen_tokens_in_window": round(sum(toks)),
            "tokens_per_s": round(sum(toks) / wall, 1),
            "tokens_per_s_inside_steps": round(sum(toks) / sum(m["timing_s/step"] for m in win), 1),
            "gen_tokens_per_s_generation_only": pick("perf/gen_tokens_per_s"),
            "response_length_mean": round(statistics.mean(lens), 2),
            "response_length_mean_per_step": [round(x, 2) for x in lens],
            "response_length_max": max(m["response_length/max"] for m in metrics),
            "response_clip_ratio": pick("response_length/clip_ratio"),
            "rollout_actor_probs_pearson": pick("training/rollout_actor_probs_pearson_corr", 6),
            # with the tie-breaker (< 1e-3)
            "reward_mean": round(statistics.mean(m["reward/mean"] for m in metrics), 4),
            "answer_accuracy": pick("reward/openai/gsm8k/acc/mean"),
            "actor_updates_per_step": pick("actor/updates"),
            "actor_empty_updates_per_step": pick("actor/empty_updates"),
            # torch allocator peak (perf/max_memory_gb before issue 26)
            "peak_mem_gb": round(max(m["perf/actor_peak_gib"] for m in metrics), 3)}

ALLOCATOR_COUNTS = ("num_alloc_retries", "num_device_alloc", "num_device_free", "num_sync_all_streams", "num_ooms")

class StepEvents:
    """Per training step: Python's garbage-collector passes (`gc.callbacks`: count, full passes, total and longest
    pause) and the CUDA caching allocator's counters (`torch.cuda.memory_stats`: device mallocs and frees, retries after
    a failed allocation, which free cached blocks and synchronise the device)."""
    def __init__(self):
        import gc
        self.gc, self.allocator, self._pauses, self._t = [], [], [], 0.0
        gc.callbacks.append(self._tick)
    def _tick(self, phase, info):
        if phase == "start": self._t = time.perf_counter()
        else: self._pauses.append((time.perf_counter() - self._t, info["generation"]))
    @staticmethod
    def _counts()->dict:
        import torch
        st = torch.cuda.memory_stats() if torch.cuda.is_available() else {}
        return {k: st.get(k, 0) for k in ALLOCATOR_COUNTS}
    def wrap(self, step):
        """`ColocatedWorker.step` with its gc passes and allocator counts recorded as one entry of `self.gc` and
        `self.allocator`."""
        def timed(worker, s, *args, **kwargs):
            self._pauses, before = [], self._counts()
            r = step(worker, s, *args, **kwargs)
            p, after = self._pauses, self._counts()
            self.gc.append({"step": s, "passes": len(p), "full_passes": sum(g == 2 for _, g in p),
                            "total_s": round(sum(d for d, _ in p), 4),
                            "longest_s": round(max((d for d, _ in p), default=0.0), 4)})
            self.allocator.append({"step": s, **{k: after[k] - before[k] for k in ALLOCATOR_COUNTS}})
            return r
        return timed

def profile_steps(step, warmup:int, top:int=12):
    """`ColocatedWorker.step` running each step after `warmup` under torch.profiler, and the list its per-step summaries
    go to."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    from omni_gspo.actor import Actor
    def labelled(name, f):
        def run(*args, **kwargs):
            with record_function(name):
                r = f(*args, **kwargs)
                if torch.cuda.is_available(): torch.cuda.synchronize()
                return r
        return run
    Actor.logprobs, Actor.update = labelled("old_log_probs", Actor.logprobs), labelled("update", Actor.update)
    out, CUDA, CPU = [], torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU
    def profiled(worker, s, *args, **kwargs):
        if s <= warmup: return step(worker, s, *args, **kwargs)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t = time.perf_counter(); r = step(worker, s, *args, **kwargs); wall = time.perf_counter() - t
        ev = prof.key_averages()
        kern = sorted((e for e in ev if e.device_type == CUDA and e.self_device_time_total > 0),
                      key=lambda e: -e.self_device_time_total)
        host = sorted((e for e in ev if e.device_type == CPU), key=lambda e: -e.self_cpu_time_total)
        phase = {e.key: {"wall_s": round(e.cpu_time_total / 1e6, 3),
                         "device_busy_s": round(e.device_time_total / 1e6, 3)}
                 for e in ev if e.key in ("old_log_probs", "update")}
        out.append({"step": s, "wall_s": round(wall, 3),
                    "response_length_mean": round(r["metrics"]["response_length/mean"], 2),
                    "device_busy_s": round(sum(e.self_device_time_total for e in kern) / 1e6, 3), **phase,
                    "top_kernels": [[e.key[:90], round(e.self_device_time_total / 1e6, 4), e.count]
                                    for e in kern[:top]],
                    "top_host_ops": [[e.key[:90], round(e.self_cpu_time_total / 1e6, 4), e.count] for e in host[:top]]})
        print("profile", json.dumps({k: v for k, v in out[-1].items() if not k.startswith("top")}), flush=True)
        return r
    return profiled, out

def main(argv=None):
    a = parse_args(argv)
    t_script = time.perf_counter()
    import torch, transformers
    from omni_gspo.config import build_config
    from omni_gspo.trainer import train
    import omni_gspo
    trl_dir, work = Path(a.trl_dir), Path(a.work)
    trl = trl_bench(trl_dir)
    mode = "lora_r32_a64_qkvo" if a.lora else "full"
    t = time.perf_counter()
    ckpt = build_checkpoint(work / f"ckpt-{'tiny-h128' if a.tiny else 'qwen25-05b'}-seed{a.seed}",
                            trl_dir / "tokenizer", a.tiny, a.seed, "float32" if a.tiny else "bfloat16")
    ckpt_s = time.perf_counter() - t
    # 512 as bench_trl.py (max(512, ...))
    data = write_questions(work / "data" / f"train-seed{a.seed}.parquet", trl, 512, a.seed)
    plens = prompt_lengths(ckpt, data)
    run = work / f"run-{mode}-{a.engine}-{time.strftime('%Y%m%d-%H%M%S')}"
    ov = overrides(a, ckpt, data, run)
    cfg = build_config("gsm8k", ov)
    rows_per_step = cfg.data.train_batch_size * cfg.rollout.n
    from omni_gspo.step import ColocatedWorker
    events, step = StepEvents(), ColocatedWorker.step
    ColocatedWorker.step, profiled = (profile_steps(events.wrap(step), a.warmup) if a.profile
                                      else (events.wrap(step), None))
    with StepClock(run / "metrics.jsonl") as clock:
        res = train(cfg)
    train_s = time.perf_counter() - clock.t0   # the whole train() call: model load, compile, steps, final checkpoint
    metrics = [json.loads(l) for l in res.metrics.read_text().splitlines()]
    result = {"bench": "omni_gspo_gspo", "omni_gspo_version": omni_gspo.__version__,
              "omni_gspo_from": str(Path(omni_gspo.__file__).parent),
              "transformers_version": transformers.__version__, "torch_version": torch.__version__,
              "device": torch.cuda.get_device_name(0) if cfg.hardware.device == "gpu" else "cpu",
              "mode": mode, "engine": a.engine, "tiny": a.tiny,
              "model": "Qwen2 (Qwen2.5-0.5B-Instruct arch, random init)" if not a.tiny
                       else "Qwen2 tiny (h128, 2 heads, 2 layers)",
              "dtype": cfg.model.dtype, "n_params": checkpoint_params(ckpt),
              "rollout_n": cfg.rollout.n, "prompts_per_step": cfg.data.train_batch_size,
              "completions_per_step": rows_per_step,
              "optimizer_steps_per_step": cfg.data.train_batch_size // cfg.actor.ppo_mini_batch_size,
              "completions_per_optimizer_step": cfg.actor.ppo_mini_batch_size * cfg.rollout.n,
              "response_length_limit": cfg.rollout.response_length, "forced_full_length": False,
              "prompt_tokens_mean": round(statistics.mean(plens), 1), "prompt_tokens_min": min(plens),
              "prompt_tokens_max": max(plens),
              **window_result(metrics, clock.stamps, clock.t0, a.warmup, rows_per_step),
              "checkpoint_build_s": round(ckpt_s, 2), "train_wall_s": round(train_s, 2),
              "script_wall_s": round(time.perf_counter() - t_script, 2), "run_folder": str(res.output_dir),
              "gc_per_step": events.gc, "allocator_per_step": events.allocator,
              "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "overrides": ov,
              **({"profile": profiled} if profiled is not None else {})}
    line = json.dumps(result)
    if a.json_out: Path(a.json_out).write_text(line + "\n")
    print(line, flush=True)
    return result

if __name__ == "__main__": main()
