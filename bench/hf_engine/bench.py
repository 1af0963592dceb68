"""Rollout throughput of the built-in engine: plain transformers `generate` against `HFEngine`, side by side in one run.

    python bench/hf_engine/bench.py                  # CUDA: Qwen2.5-0.5B architecture + thinker slice, B=64 and 256,
                                                       256 -> 256 tokens
    python bench/hf_engine/bench.py --cpu            # a check of the script on CPU, tiny models and sizes
    python bench/hf_engine/bench.py --models qwen2.5-0.5b --batches 256 --out bench/hf_engine/result.json

Engines, each timed on the same model, prompts and token budget:
- `generate`: plain `model.generate(do_sample=True)` with its default dynamic cache (the baseline);
- `hf_engine_dynamic`: `HFEngine` with `rollout.hf_fast_decode=off` (dynamic cache, log-probs recorded);
- `hf_engine_fast`: `HFEngine` with `rollout.hf_fast_decode=on` (static KV cache, compiled decode step, its own decode
  loop checking for the end every few steps, log-probs recorded).
Weights are random (bf16 on CUDA, fp32 on CPU). The end-of-turn token is suppressed in every engine, so every row
generates exactly `gen_len` tokens and all engines do the same work. Each engine runs once untimed first (for the fast
path this compiles; `warmup_s`), then `--iters` timed calls. The engine rows also report the Pearson correlation of
their sampled-token probabilities with the actor's recomputation (`completion_logprobs`), as the trainer checks it.
One JSON object per row is printed as it is measured, then the whole result (also written to `--out` if given).
"""
import argparse, json, resource, sys, time, traceback
from pathlib import Path
from types import SimpleNamespace
import torch
import transformers
from transformers import (Qwen2Config, Qwen2ForCausalLM, Qwen3OmniMoeThinkerConfig,
                          Qwen3OmniMoeThinkerForConditionalGeneration)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from omni_gspo.config import build_config
from omni_gspo.files import atomic_write_text
from omni_gspo.data import Prompt
from omni_gspo.logprobs import completion_logprobs
from omni_gspo.rollout import HFEngine, rollout_parity

QWEN_SPECIAL = 151643, 151645   # Qwen's <|endoftext|> (pad) and <|im_end|> (end of turn)
CPU_VOCAB = 4096                # --cpu: a small vocabulary, its last two ids as pad and end of turn

ENGINES = ('generate', 'hf_engine_dynamic', 'hf_engine_fast')
MODELS = ('qwen2.5-0.5b', 'thinker-slice')

def special(cpu:bool)->tuple[int, int]: return (CPU_VOCAB - 2, CPU_VOCAB - 1) if cpu else QWEN_SPECIAL

def qwen25_05b(cpu:bool)->Qwen2ForCausalLM:
    "The Qwen2.5-0.5B architecture (tiny on CPU), random weights."
    dims = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2) if cpu else \
           dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                num_key_value_heads=2)
    pad, eos = special(cpu)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=CPU_VOCAB if cpu else 151936, max_position_embeddings=32768,
                                        rms_norm_eps=1e-6, tie_word_embeddings=True,
                                        rope_parameters={'rope_type': 'default', 'rope_theta': 1e6},
                                        use_sliding_window=False, bos_token_id=pad, eos_token_id=eos, pad_token_id=pad,
                                        **dims))

def thinker_slice(cpu:bool, layers:int)->Qwen3OmniMoeThinkerForConditionalGeneration:
    """The Qwen3-Omni-30B-A3B thinker's text decoder at its real width with `layers` of its 48 layers (tiny on CPU);
    towers shrunk (text prompts do not use them)."""
    pad, eos = special(cpu)
    text = dict(vocab_size=152064, hidden_size=2048, intermediate_size=768, num_hidden_layers=layers,
                num_attention_heads=32, num_key_value_heads=4, head_dim=128, moe_intermediate_size=768, num_experts=128,
                num_experts_per_tok=8, decoder_sparse_step=1, norm_topk_prob=True, max_position_embeddings=65536,
                rms_norm_eps=1e-6, tie_word_embeddings=False,
                rope_parameters={'rope_type': 'default', 'rope_theta': 1e6, 'mrope_section': [24, 20, 20],
                                 'interleaved': True, 'mrope_interleaved': True},
                pad_token_id=pad, bos_token_id=pad, eos_token_id=eos)
    if cpu: text.update(vocab_size=CPU_VOCAB, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                        moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
                        rope_parameters={**text['rope_parameters'], 'mrope_section': [2, 3, 3]})
    vision = dict(depth=1, hidden_size=64, intermediate_size=128, num_heads=4, hidden_act='gelu_pytorch_tanh',
                  in_channels=3, patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                  out_hidden_size=text['hidden_size'], num_position_embeddings=256, deepstack_visual_indexes=[0])
    audio = dict(num_mel_bins=128, encoder_layers=1, encoder_attention_heads=4, encoder_ffn_dim=128, d_model=64,
                 output_dim=text['hidden_size'], downsample_hidden_size=32, max_source_positions=1500, n_window=50,
                 n_window_infer=800, conv_chunksize=500)
    cfg = Qwen3OmniMoeThinkerConfig(text_config=text, vision_config=vision, audio_config=audio,
                                    position_id_per_seconds=13, seconds_per_chunk=2, audio_token_id=151675,
                                    audio_start_token_id=151669, audio_end_token_id=151670, image_token_id=151655,
                                    video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653,
                                    user_token_id=872)
    model = Qwen3OmniMoeThinkerForConditionalGeneration(cfg)
    return model

def build(name:str, a, dev:str, dtype:torch.dtype):
    "Model `name` on `dev` in `dtype`, random weights (normal 0.02, norms 1)."
    torch.manual_seed(0)
    torch.set_default_dtype(dtype)
    try:
        with torch.device(dev):
            model = qwen25_05b(a.cpu) if name == 'qwen2.5-0.5b' else thinker_slice(a.cpu, a.thinker_layers)
    finally: torch.set_default_dtype(torch.float32)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.dim() == 1: p.fill_(1.0) if 'norm' in n else p.zero_()
            else: p.normal_(0, 0.02)
    return model.eval()

def sync(dev): torch.cuda.synchronize() if dev == 'cuda' else None

def peak_gib(dev)->float:
    "CUDA: peak allocated since the last reset; CPU: the process's peak RSS (monotonic over the whole run)."
    return (torch.cuda.max_memory_allocated() if dev == 'cuda'
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) / 2**30

def timed(fn, dev, iters):
    """(seconds of the untimed first call, mean seconds of `iters` timed calls, last result, peak GiB of the timed
    calls)."""
    sync(dev); t = time.perf_counter(); fn(); sync(dev); warm = time.perf_counter() - t
    if dev == 'cuda': torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(iters):
        sync(dev); t = time.perf_counter(); out = fn(); sync(dev); ts.append(time.perf_counter() - t)
    return warm, sum(ts) / len(ts), out, peak_gib(dev)

def parity(model, ro, eos:int, rows:int=16)->float:
    "Pearson correlation of the rollout's sampled-token probabilities with the actor's recomputation (row chunks)."
    P = ro.prompt_ids.shape[1]
    with torch.no_grad():
        actor = torch.cat([completion_logprobs(model, ro.input_ids[i:i + rows], ro.attention_mask[i:i + rows], P,
                                               banned=[eos])
                           for i in range(0, len(ro.input_ids), rows)])
    return rollout_parity(ro.logprobs, actor, ro.response_mask)['training/rollout_actor_probs_pearson_corr']

def profile(fn, dev, engine, B):
    "One more call of `fn` under torch.profiler: the top operators by own CPU time and the top kernels by GPU time."
    from torch.profiler import profile as prof, ProfilerActivity
    with prof(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == 'cuda' else [])) as p:
        fn(); sync(dev)
    ka = p.key_averages()
    print(f'== profile {engine} B={B}: top by self CPU time', flush=True)
    print(ka.table(sort_by='self_cpu_time_total', row_limit=20, max_name_column_width=60), flush=True)
    if dev == 'cuda':
        print(f'== profile {engine} B={B}: top by GPU time', flush=True)
        print(ka.table(sort_by='self_cuda_time_total', row_limit=15, max_name_column_width=60), flush=True)

def bench_model(name, a, dev, dtype, emit):
    model = build(name, a, dev, dtype)
    pad, eos = special(a.cpu)
    tok = SimpleNamespace(pad_token_id=pad, eos_token_id=eos)   # all the engine reads of a tokenizer
    g = torch.Generator().manual_seed(1)
    for B in a.batches:
        ids = torch.randint(0, eos - 100, (B, a.prompt_len), generator=g)
        prompts = [Prompt(None, row.tolist()) for row in ids]
        base = dict(engine='', model=name, batch=B, prompt_len=a.prompt_len, gen_len=a.gen_len,
                    dtype=str(dtype).split('.')[-1], device=dev)
        def plain():
            x = ids.to(dev)
            return model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=True, temperature=1.0,
                                  top_k=0, top_p=1.0, max_new_tokens=a.gen_len, suppress_tokens=[eos], eos_token_id=eos,
                                  pad_token_id=pad)
        runs = [('generate', plain, None)]
        for setting in ('off', 'on'):
            rcfg = build_config(overrides={'rollout.response_length': a.gen_len,
                                           'rollout.hf_fast_decode': setting}).rollout
            eng = HFEngine(model, tok, rcfg, [eos])
            runs.append((f"hf_engine_{'dynamic' if setting == 'off' else 'fast'}",
                         lambda eng=eng: eng.generate(prompts, n=1, seed=0), eng))
        for engine, fn, eng in [r for r in runs if r[0] in a.engines]:
            row = {**base, 'engine': engine}
            # plain generate: transformers' own experts; the engine: as the adapter loads the thinker
            if name == 'thinker-slice':
                model.config.text_config._experts_implementation = 'grouped_mm' if engine == 'generate' else a.experts
                row['experts_implementation'] = model.config.text_config._experts_implementation
            try:
                warm, secs, out, peak = timed(fn, dev, a.iters)
                gen = out.response_mask.sum().item() if eng else (out.shape[1] - a.prompt_len) * B
                assert gen == B * a.gen_len, f"{engine}: {gen} tokens generated, expected {B * a.gen_len}"
                row.update(gen_tokens_per_s=round(gen / secs, 1), peak_gib=round(peak, 2), seconds=round(secs, 3),
                           warmup_s=round(warm, 2))
                if eng: row['probs_pearson'] = round(parity(model, out, eos), 6)
                if eng and engine == 'hf_engine_fast': row['cache'] = type(eng._caches[B]).__name__
            # keep the other rows: one failing engine (e.g. compile on a new GPU) is itself a result
            except Exception as e:
                row['error'] = f"{type(e).__name__}: {e}"[:2000]; traceback.print_exc()
            emit(row)
            if a.profile and 'error' not in row: profile(fn, dev, engine, B)
    del model
    if dev == 'cuda': torch.cuda.empty_cache()

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cpu', action='store_true', help='tiny models and sizes on CPU: a check of the script itself')
    ap.add_argument('--models', default=','.join(MODELS), help=f"comma-separated, any of {', '.join(MODELS)}")
    ap.add_argument('--batches', default=None, help='comma-separated batch sizes (default 64,256; --cpu 4,16)')
    ap.add_argument('--prompt-len', type=int, default=None, help='prompt tokens (default 256; --cpu 32)')
    ap.add_argument('--gen-len', type=int, default=None, help='generated tokens per row (default 256; --cpu 32)')
    ap.add_argument('--engines', default=','.join(ENGINES), help=f"comma-separated, any of {', '.join(ENGINES)}")
    ap.add_argument('--thinker-layers', type=int, default=8,
                    help='decoder layers of the thinker slice (the full thinker has 48)')
    ap.add_argument('--experts', default='frozen_grouped_mm',
                    help="the thinker slice's experts implementation ('frozen_grouped_mm', as the adapter loads it; "
                    "'grouped_mm')")
    ap.add_argument('--profile', action='store_true',
                    help='after each row, one more call under torch.profiler (tables printed)')
    ap.add_argument('--iters', type=int, default=2, help='timed calls per engine after the untimed first one')
    ap.add_argument('--out', default='', help='also write the whole result to this JSON file')
    a = ap.parse_args(argv)
    a.engines = a.engines.split(',')
    if unknown := set(a.engines) - set(ENGINES):
        raise SystemExit(f'--engines: unknown {sorted(unknown)}; known: {", ".join(ENGINES)}')
    a.batches = [int(b) for b in (a.batches or ('4,16' if a.cpu else '64,256')).split(',')]
    a.prompt_len = a.prompt_len or (32 if a.cpu else 256); a.gen_len = a.gen_len or (32 if a.cpu else 256)
    dev = 'cpu' if a.cpu else 'cuda'
    if dev == 'cuda' and not torch.cuda.is_available():
        raise SystemExit('no CUDA device: run with --cpu for the tiny check')
    # several models and batch sizes share the compiled `__call__` in one process
    torch._dynamo.config.recompile_limit = 64
    rows = []
    def emit(row): rows.append(row); print(json.dumps(row), flush=True)
    models = a.models.split(',')
    if unknown := set(models) - set(MODELS):
        raise SystemExit(f"--models: unknown {sorted(unknown)}; known: {', '.join(MODELS)}")
    for name in models:
        bench_model(name, a, dev, torch.float32 if a.cpu else torch.bfloat16, emit)
    speedup = {f"{r['model']} B={r['batch']} {r['engine']}": round(r['gen_tokens_per_s'] / p['gen_tokens_per_s'], 2)
               for r in rows for p in rows
               if 'gen_tokens_per_s' in r and 'gen_tokens_per_s' in p and p['engine'] == 'generate'
               and r['engine'] != 'generate' and (p['model'], p['batch']) == (r['model'], r['batch'])}
    result = dict(device=torch.cuda.get_device_name() if dev == 'cuda' else 'cpu', torch=torch.__version__,
                  transformers=transformers.__version__, args={k: v for k, v in vars(a).items() if k != 'out'},
                  rows=rows, speedup_vs_generate=speedup)
    print(json.dumps(result, indent=1))
    if a.out: atomic_write_text(Path(a.out), json.dumps(result, indent=1) + '\n')

if __name__ == '__main__': main()
