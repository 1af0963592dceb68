"""Rollout<->actor parity of the built-in engine on a real checkpoint, three decode paths side by side (CPU or GPU).

The same prompts, seed and weights go through `HFEngine` three ways: the eager dynamic-cache path (`off`), the compiled
fast path without inductor's `emulate_precision_casts` (`compiled_fused`), and the fast path as the package compiles it
(`compiled`). Each rollout is then scored by the actor's own recomputation (`Actor.logprobs`), and the script prints one
JSON line per path: the trainer's parity metrics plus the mean and RMS of the sampled tokens' |delta log p|.

    python bench/decode_parity/parity.py --model /tmp/lc/qwen05 --prompts 4 --n 4 --tokens 96 --lora-std 0.004
"""
from __future__ import annotations
import argparse, json, time
from pathlib import Path
import torch
import omni_gspo.rollout as rollout
from omni_gspo.actor import Actor
from omni_gspo.config import build_config
from omni_gspo.data import encode_prompts, read_rows
from omni_gspo.model import adapter_for, load_model, load_tokenizer, resolve_model_path
from omni_gspo.lora import configure_trainable
from omni_gspo.platform import torch_device
from omni_gspo.tasks.gsm8k import gsm8k_examples

# hf_fast_decode, emulate_precision_casts
PATHS = {'off': ('off', None), 'compiled_fused': ('on', False), 'compiled': ('on', True)}
DATA = Path(__file__).parents[1]/'learning'/'data'/'train.parquet'

def policy(model:str, tokens:int, lora_std:float, device):
    """The learning run's policy (bf16, fp32 logits and residual, LoRA r32 on all projections), its LoRA B matrices
    drawn from N(0, lora_std)."""
    cfg = build_config(overrides={'model.path': model, 'model.dtype': 'bfloat16', 'model.lora_rank': 32,
                                  'model.lora_alpha': 64,
                                  'model.target_modules': 'q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj',
                                  'rollout.response_length': tokens, 'data.max_prompt_length': 256})
    mc, path = cfg.model, resolve_model_path(cfg.model.path, cfg.model.warm_start_steps)
    m = load_model(path, mc.dtype, device, mc.attn_implementation, mc.fp32_logits, mc.fp32_residual, adapter_for(path))
    tok = load_tokenizer(path)
    m = configure_trainable(m, cfg.model)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if 'lora_B' in n: p.copy_((torch.randn(p.shape, generator=g) * lora_std).to(p))
    return cfg, m, tok

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', required=True); ap.add_argument('--hardware', default='cpu')
    ap.add_argument('--prompts', type=int, default=4); ap.add_argument('--n', type=int, default=4)
    ap.add_argument('--tokens', type=int, default=96); ap.add_argument('--lora-std', type=float, default=0.004)
    a = ap.parse_args()
    dev = torch_device(a.hardware)
    cfg, model, tok = policy(a.model, a.tokens, a.lora_std, dev)
    adapter = adapter_for(Path(a.model))
    actor = Actor(model, cfg.actor, cfg.algorithm, adapter)
    prompts, _ = encode_prompts(gsm8k_examples(read_rows(DATA, 'train file')[:a.prompts], str(DATA)), tok,
                                cfg.data.max_prompt_length)
    package_emulates = rollout.DECODE_COMPILE_OPTIONS['emulate_precision_casts']
    try:
        for name, (fast, emulate) in PATHS.items():
            cfg.rollout.hf_fast_decode = fast
            if emulate is not None: rollout.DECODE_COMPILE_OPTIONS['emulate_precision_casts'] = emulate
            torch._dynamo.reset()
            engine = rollout.HFEngine.from_config(model, tok, adapter, None, cfg)   # as the trainer builds it
            t = time.perf_counter(); ro = engine.generate(prompts, n=a.n, seed=0); gen_s = time.perf_counter() - t
            lp = actor.logprobs(ro)
            d = (ro.logprobs - lp)[ro.response_mask.bool()].double()
            print(json.dumps({'path': name, **rollout.rollout_parity(ro.logprobs, lp, ro.response_mask),
                              'logp_absdiff_mean': d.abs().mean().item(),
                              'logp_diff_rms': d.pow(2).mean().sqrt().item(), 'tokens': d.numel(),
                              'gen_s': round(gen_s, 1)}), flush=True)
    finally: rollout.DECODE_COMPILE_OPTIONS['emulate_precision_casts'] = package_emulates

if __name__ == '__main__': main()
