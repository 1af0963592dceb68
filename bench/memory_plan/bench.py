"""Benchmark (device): the project's actor on the full-size Qwen3-Omni-30B-A3B thinker on ONE GPU (issue 11's memory
plan).

    python bench/memory_plan/bench.py [--offload] [--budgets 8192 16384] [--iters 3] \
        [--experts grouped_mm frozen_grouped_mm] [--no-ckpt] [--out FILE.jsonl]
    python bench/memory_plan/bench.py --cpu     # a check of the script itself: tiny config, gloo, CPU
    python bench/memory_plan/bench.py --gspo-step [--engine hf|vllm] ...   # whole GSPO steps, rollout by the built-in
                                                                             or a colocated vLLM engine

The thinker at its real size with random bf16 weights (`thinker.py`: built on meta, materialised with `to_empty`), LoRA
r32/α64 on q/k/v/o by `configure_trainable`, sharded by `omni_gspo.fsdp.shard_model` on a one-rank process group
(FSDP2, activation checkpointing, optional parameter CPU offload), trained by `omni_gspo.actor.Actor`: old log-probs
(`logprobs`) and one GSPO update (`update`: one mini-batch, micro-batches of `ppo_max_token_len_per_gpu` tokens) on a
hand-built rollout of `--rows` sequences of `--prompt` + `--response` random tokens. Each token budget in `--budgets`
runs `--iters` iterations; the first is a warm-up. Prints one JSON line per budget (and appends it to `--out`).
"""
from __future__ import annotations
import argparse, json, math, sys, threading, time
from pathlib import Path
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from thinker import materialise, meta_policy, thinker_config

def args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cpu', action='store_true', help='tiny config on CPU (gloo): a check of the script')
    ap.add_argument('--offload', action='store_true', help='FSDP2 parameter CPU offload (actor.fsdp_cpu_offload)')
    ap.add_argument('--layers', type=int, default=None, help='text decoder layers (default: the real 48; 2 with --cpu)')
    ap.add_argument('--rows', type=int, default=8)
    ap.add_argument('--prompt', type=int, default=1024)
    ap.add_argument('--response', type=int, default=1024)
    ap.add_argument('--budgets', type=int, nargs='+', default=[8192],
                    help='actor.ppo_max_token_len_per_gpu values to run')
    ap.add_argument('--iters', type=int, default=3)
    ap.add_argument('--experts', nargs='+', default=['frozen_grouped_mm'],
                    help="experts implementations to run, one after the other on the same model: 'frozen_grouped_mm' "
                         "(the project's, omni_gspo.moe, what ThinkerAdapter.load sets), 'grouped_mm' (transformers')")
    ap.add_argument('--no-ckpt', action='store_true', help='activation checkpointing off')
    ap.add_argument('--compile', action='store_true',
                    help="actor.compile: torch.compile each text decoder layer's forward")
    ap.add_argument('--gspo-step', action='store_true',
                    help='each iteration a whole GSPO step: the built-in engine (HFEngine) samples the '
                    'rollout on the sharded actor (one random prompt, --rows samples of --response tokens), random '
                    'rewards, group advantages, then old log-probs and the update')
    ap.add_argument('--engine', choices=['hf', 'vllm'], default='hf',
                    help="--gspo-step's rollout engine: hf (HFEngine on the sharded actor) or "
                    "vllm (a colocated VLLMEngine beside it: asleep for the update, then the changed weights synced, "
                    "as RolloutWorker does)")
    ap.add_argument('--reserve-gib', type=float, default=1.5,
                    help='--engine vllm on a GPU: memory left outside the engine beside the resident actor')
    ap.add_argument('--profile', action='store_true',
                    help='one more iteration of the last setting under torch.profiler: the top GPU kernels')
    ap.add_argument('--out', default='', help='append the JSON lines to this file too')
    return ap.parse_args()

def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize()

def gib(x): return round(x / 2**30, 2)

def build_actor(a, dev):
    "Config, model (sharded, materialised) and `Actor`, as the trainer wires them (`shard_actor`, then `Actor`)."
    from omni_gspo.actor import Actor
    from omni_gspo.config import build_config
    from omni_gspo.model import ThinkerAdapter
    from omni_gspo.workers import shard_actor
    cfg = build_config('gsm8k', {'hardware.device': 'cpu' if a.cpu else 'gpu', 'model.dtype': 'bfloat16',
                                 'model.lora_rank': 32, 'model.lora_alpha': 64, 'rollout.n': a.rows, 'actor.fsdp': True,
                                 'actor.fsdp_cpu_offload': a.offload, 'actor.activation_checkpointing': not a.no_ckpt,
                                 'actor.compile': a.compile, 'actor.ppo_mini_batch_size': 1,
                                 'actor.ppo_max_token_len_per_gpu': a.budgets[0]})
    t = time.perf_counter()
    model = meta_policy(thinker_config(tiny=a.cpu, layers=a.layers), cfg.model)
    # as the trainer: FSDP2 units, param_dtype = model.dtype, checkpointing, actor.compile
    shard_actor(model, cfg, ThinkerAdapter())
    materialise(model, dev, params_on='cpu' if a.offload else dev)
    sync(dev)
    build_s = time.perf_counter() - t
    actor = Actor(model, cfg.actor, cfg.algorithm, ThinkerAdapter(), temperature=cfg.rollout.temperature,
                  total_steps=a.iters * len(a.budgets))
    return cfg, model, actor, build_s

def random_rollout(a, vocab, dev, seed=0):
    "A `Rollout` of `a.rows` samples of one prompt: `a.prompt` + `a.response` random token ids, no padding."
    from omni_gspo.rollout import Rollout
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (a.rows, a.prompt + a.response), generator=g).to(dev)
    ones = torch.ones_like(ids)
    return Rollout(ids[:, :a.prompt], ones[:, :a.prompt], ids[:, a.prompt:], ones[:, a.prompt:],
                   torch.zeros(a.rows, a.response, device=dev), ['length'] * a.rows,
                   torch.zeros(a.rows, dtype=torch.long, device=dev))

def clock(fn, dev):
    "`fn()` and its seconds, the device synchronised before and after."
    sync(dev); t = time.perf_counter()
    out = fn()
    sync(dev); return out, time.perf_counter() - t

class DevicePeak:
    """Largest GPU memory in use (total - free: every allocator of the process, vLLM's sleep-mode pool too) seen by a
    thread polling every `dt` s; 0 on CPU."""
    def __init__(self, dt:float=0.005): self.dt, self.peak, self._stop = dt, 0, threading.Event()
    def _poll(self):
        while not self._stop.is_set():
            free, total = torch.cuda.mem_get_info(); self.peak = max(self.peak, total - free); time.sleep(self.dt)
    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True) if torch.cuda.is_available() else None
        if self._thread: self._thread.start()
        return self
    def __exit__(self, *exc):
        self._stop.set()
        if self._thread: self._thread.join()

def timed(fn, dev, store:list):
    "`fn` with the seconds of each call (`clock`) appended to `store`."
    def run(*args, **kw):
        out, s = clock(lambda: fn(*args, **kw), dev)
        store.append(s)
        return out
    return run

def rollout_worker(a, model, dev):
    """The rollout as the trainer runs it: a `RolloutWorker` around `HFEngine` (on the sharded actor's own module) or a
    colocated `VLLMEngine`, end of turn suppressed so every row is `a.response` long; and the prompt."""
    from omni_gspo.config import build_config
    from omni_gspo.data import Example, Prompt
    from omni_gspo.model import ThinkerAdapter
    from omni_gspo.lora import export_weights
    from omni_gspo.rollout import HFEngine
    from omni_gspo.tokenizer import qwen_tokenizer
    from omni_gspo.workers import RolloutWorker
    tok, ad = qwen_tokenizer(), ThinkerAdapter()
    banned = ad.banned_token_ids(model) + [tok.eos_token_id]
    prompt = Prompt(Example([{'role': 'user', 'content': ''}], '', 'bench', 0),
                    torch.randint(0, 150000, (a.prompt,), generator=torch.Generator().manual_seed(0)).tolist())
    over = {'rollout.response_length': a.response, 'rollout.n': a.rows, 'data.max_prompt_length': a.prompt}
    if a.engine == 'hf':
        return RolloutWorker(HFEngine(model, tok, build_config('gsm8k', over).rollout, banned)), prompt, {}
    from omni_gspo.vllm_engine import VLLMEngine, vllm_settings
    # vLLM takes util x total and needs it free at its start: the actor's share is already taken
    if dev.type == 'cuda':
        free, total = torch.cuda.mem_get_info()
        over |= {'rollout.engine': 'vllm', 'hardware.device': 'gpu',
                 'rollout.vllm.gpu_memory_utilization': math.floor((free - a.reserve_gib * 2**30) / total * 100) / 100}
    cfg = build_config('gsm8k', over)
    eng, start_s = clock(lambda: VLLMEngine(model, tok, cfg.rollout, ad.processor(tok), banned=banned, adapter=ad,
                                            max_model_len=a.prompt + a.response,
                                            **vllm_settings(cfg.rollout.vllm, cfg.hardware.device)), dev)
    # what each step's sync sends
    changed = sum(v.numel() * v.element_size() for _, v in export_weights(model, changed_only=True))
    return RolloutWorker(eng), prompt, {'engine_start_s': round(start_s, 1), 'synced_gib_per_step': gib(changed),
                                        'gpu_memory_utilization': over.get('rollout.vllm.gpu_memory_utilization')}

def gspo_step(actor, worker, prompt, a, dev)->dict:
    """One GSPO step as `omni_gspo.step.gspo_step` orders it: sample, release the engine, reward and group advantages,
    old log-probs, update, weight sync; seconds of each part."""
    from omni_gspo.algos import group_advantages
    from omni_gspo.config import build_config
    from omni_gspo.rewards import score_batch
    from omni_gspo.rollout import rollout_parity
    from omni_gspo.tasks.gsm8k import GSM8K_SOURCE
    ro, generate_s = clock(lambda: worker.engine.generate([prompt], n=a.rows), dev)
    _, release_s = clock(worker.release, dev)
    texts = worker.engine.tok.batch_decode([r[m.bool()] for r, m in zip(ro.response_ids.cpu(), ro.response_mask.cpu())])
    # the gsm8k reward, timed as the trainer runs it (its process pool); random weights score 0 everywhere,
    n = len(texts)
    _, reward_s = clock(lambda: score_batch([GSM8K_SOURCE] * n, texts, ['72'] * n, [None] * n,
                                            build_config('gsm8k').reward), dev)
    adv = group_advantages(torch.rand(n), ro.group_ids.cpu())   # so the update gets random rewards' advantages instead
    it = iteration(actor, ro, adv.float().to(dev), dev)
    m, sync_s = clock(lambda: worker.update_weights(actor.model), dev)
    parity = rollout_parity(ro.logprobs, it.pop('old_logp'),
                            ro.response_mask)['training/rollout_actor_probs_pearson_corr']
    return it | {'generate': generate_s, 'release': release_s, 'reward': reward_s, 'sync': sync_s,
                 'weight_sync': m['timing_s/sync'], 'generated_tokens': int(ro.response_mask.sum()),
                 'probs_pearson': parity}

def iteration(actor, ro, adv, dev)->dict:
    "Old log-probs then one update; seconds of each part, the update's forward+backward and its optimizer part."
    fwd_bwd = []
    # every micro-batch's forward+backward
    actor._accumulate = timed(type(actor)._accumulate.__get__(actor), dev, fwd_bwd)
    old, old_s = clock(lambda: actor.logprobs(ro), dev)
    m, update_s = clock(lambda: actor.update(ro, adv, old, n=ro.response_ids.shape[0]), dev)
    return {'old_logprobs': old_s, 'update': update_s, 'update_fwd_bwd': sum(fwd_bwd),
            'update_optimizer': update_s - sum(fwd_bwd), 'micro_batches': m['actor/micro_batches'],
            'loss': m['actor/loss'], 'grad_norm': m['actor/grad_norm'], 'old_logp': old}

def profile(fn, dev):
    "One call of `fn` under torch.profiler: GPU busy time and the kernels that take most of it."
    from torch.profiler import profile as prof, ProfilerActivity
    sync(dev); t = time.perf_counter()
    with prof(activities=[ProfilerActivity.CUDA] if dev.type == 'cuda' else [ProfilerActivity.CPU]) as p:
        fn(); sync(dev)
    print(f'== profile of one iteration ({time.perf_counter() - t:.2f} s wall, under the profiler)', flush=True)
    print(p.key_averages().table(sort_by='self_cuda_time_total' if dev.type == 'cuda' else 'self_cpu_time_total',
                                 row_limit=30, max_name_column_width=90), flush=True)

def check_gather_sum(dev, tc)->float:
    """Largest difference of `omni_gspo.moe.gather_sum` (the Triton kernel on CUDA) from gather-then-sum, in units of
    the output's bf16 spacing."""
    from omni_gspo.moe import gather_sum
    k, rows = tc.num_experts_per_tok, torch.randn(4096 * tc.num_experts_per_tok, tc.hidden_size, device=dev).bfloat16()
    inv = torch.randperm(len(rows), device=dev)
    ref = rows[inv].view(-1, k, rows.shape[-1]).sum(1)
    ulp = torch.finfo(torch.bfloat16).eps * ref.float().abs().clamp(min=1)
    return round(((gather_sum(rows, inv, k).float() - ref.float()).abs() / ulp).max().item(), 2)

def main():
    a = args()
    dev = torch.device('cpu' if a.cpu else 'cuda')
    if not a.cpu: torch.cuda.set_device(0)
    from omni_gspo.platform import fp32_gemm_sums
    # as the trainer's ActorWorker does at start: process-wide, so an in-process vLLM engine's cuBLAS products too
    fp32_gemm_sums(dev)
    cfg, model, actor, build_s = build_actor(a, dev)
    gather_check = check_gather_sum(dev, model.get_base_model().config.text_config)
    base_alloc = torch.cuda.memory_allocated() if dev.type == 'cuda' else 0
    ro = random_rollout(a, 150000, dev)   # ids below the special tokens
    worker, prompt, engine_info = rollout_worker(a, model, dev) if a.gspo_step else (None, None, {})
    adv = torch.randn(a.rows, generator=torch.Generator().manual_seed(1)).to(dev)
    tokens = a.rows * (a.prompt + a.response)
    n_params = sum(p.numel() for p in model.parameters())
    for impl, budget in [(i, b) for i in a.experts for b in a.budgets]:
        model.get_base_model().config.text_config._experts_implementation = impl
        actor.token_budget = budget
        its, peaks, device_peaks = [], [], []
        for _ in range(a.iters):
            if dev.type == 'cuda': torch.cuda.reset_peak_memory_stats()
            with DevicePeak() as dp:
                its.append(gspo_step(actor, worker, prompt, a, dev) if a.gspo_step else iteration(actor, ro, adv, dev))
            peaks.append(torch.cuda.max_memory_allocated() if dev.type == 'cuda' else 0); device_peaks.append(dp.peak)
            print('iteration', len(its), {k: round(v, 3) for k, v in its[-1].items() if isinstance(v, float)},
                  f'peak {gib(peaks[-1])} GiB (torch), {gib(device_peaks[-1])} GiB (device)', flush=True)
        steady = its[1:] or its
        parts = (('generate', 'release', 'reward', 'sync', 'weight_sync') * a.gspo_step
                 + ('old_logprobs', 'update', 'update_fwd_bwd', 'update_optimizer'))
        mean = {k: sum(i[k] for i in steady) / len(steady) for k in parts}
        r = {'bench': 'memory_plan', 'device': torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu',
             'model': 'Qwen3-Omni-30B-A3B thinker (random bf16)' if not a.cpu else 'tiny thinker (CPU check)',
             'layers': model.get_base_model().config.text_config.num_hidden_layers,
             'params_b': round(n_params / 1e9, 2), 'trainable_params': sum(p.numel() for p in actor.params),
             'lora': 'r32/a64 q,k,v,o', 'fsdp_world': 1, 'cpu_offload': a.offload,
             'activation_checkpointing': not a.no_ckpt, 'rows': a.rows, 'prompt_len': a.prompt,
             'response_len': a.response, 'tokens_per_iteration': tokens, 'tokens_per_microbatch': budget,
             'micro_batches': steady[-1]['micro_batches'],
             'experts_implementation': model.get_base_model().config.text_config._experts_implementation,
             'build_s': round(build_s, 1), 'weights_gib': gib(base_alloc), 'peak_gib': gib(max(peaks)),
             'peak_gib_per_iter': [gib(p) for p in peaks],
             # with a vLLM engine in the process the torch figure also counts its sleep-mode pool: use this one
             'device_peak_gib': gib(max(device_peaks)),
             'step_breakdown_s': {k: round(v, 3) for k, v in mean.items()},
             'iter_s': [round(sum(i.get(k, 0)
                                  for k in ('generate', 'release', 'reward', 'old_logprobs', 'update', 'sync')), 2)
                        for i in its],
             **({'gspo_step': True, 'engine': a.engine, **engine_info,
                 'generated_tok_per_s': round(its[-1]['generated_tokens'] / mean['generate']),
                 'min_probs_pearson': round(min(i['probs_pearson'] for i in its), 6)} if a.gspo_step else {}),
             'actor_tokens_per_s': round(tokens / mean['update_fwd_bwd']),
             'old_logprobs_tokens_per_s': round(tokens / mean['old_logprobs']), 'loss': round(its[-1]['loss'], 4),
             'grad_norm': round(its[-1]['grad_norm'], 4), 'iters': a.iters, 'gather_sum_max_diff_ulp': gather_check,
             'compiled_layers': a.compile, 'fsdp_param_dtype': 'bfloat16', 'torch': torch.__version__,
             'bf16_reduced_precision_sums': torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}
        line = json.dumps(r)
        print('RESULT', line, flush=True)
        if a.out:
            with open(a.out, 'a') as f: f.write(line + '\n')
    if a.profile: profile(lambda: iteration(actor, ro, adv, dev), dev)
    if worker: worker.close()   # vLLM's shutdown may take the default process group with it
    if torch.distributed.is_initialized(): torch.distributed.destroy_process_group()

if __name__ == '__main__': main()
