"""Rollout↔actor probability parity in bf16: the output layer in bf16 or fp32 (`model.fp32_logits`), the residual
stream in bf16 or fp32 (`model.fp32_residual`), side by side.

The built-in engine samples `--prompts` held-out problems × 2 at T = 1 (eager decode) and records each sampled
token's log-prob. The actor then scores the same tokens with `completion_logprobs`, and an fp32 copy of the model
gives the reference. Each configuration runs on the same prompts with the same seed:
- `scale` multiplies the output layer's weight: 1 is the model as it is; 2.5 makes a sharper policy with larger
  logits, like a policy after RL (the learning proof's entropy fell from 0.32 to 0.08);
- `fp32_logits` and `fp32_residual`: off/off, on/off, on/on, for the engine and the actor alike (one model serves both).
Prints one JSON line per configuration, then a summary with (1 - r) ratios against off/off.

    python bench/logits_precision/bench.py --model /path/to/qwen05 --data bench/learning/data/heldout.parquet
"""
from __future__ import annotations
import argparse, json, time
import torch
from omni_gspo.config import RolloutConfig
from omni_gspo.data import encode_prompts, read_rows
from omni_gspo.model import base_model, load_model, load_tokenizer, running_positions
from omni_gspo.logprobs import completion_logprobs
from omni_gspo.rollout import HFEngine, rollout_parity
from omni_gspo.tasks.gsm8k import gsm8k_examples

def scaled(path, dtype:str, scale:float, fp32_logits:bool, fp32_residual:bool):
    "The model at `path` in `dtype`, its output layer's weight times `scale`, in eval mode."
    m = load_model(path, dtype, torch.device('cpu'), fp32_logits=fp32_logits, fp32_residual=fp32_residual).eval()
    with torch.no_grad(): base_model(m).get_output_embeddings().weight.mul_(scale)
    return m

def measure(path, tok, prompts, scale:float, fp32_logits:bool, fp32_residual:bool, tokens:int)->dict:
    "Parity numbers of one configuration: rollout vs actor, and each against the fp32 model."
    m = scaled(path, 'bfloat16', scale, fp32_logits, fp32_residual)
    t = time.perf_counter()
    ro = HFEngine(m, tok, RolloutConfig(response_length=tokens, temperature=1.0,
                                        hf_fast_decode='off')).generate(prompts, n=2, seed=0)
    gen_s = time.perf_counter() - t
    # the positions generate uses, as the trainer's actor does
    P, mask, pos = ro.prompt_ids.shape[1], ro.response_mask, running_positions(ro.attention_mask)
    with torch.no_grad():
        actor = completion_logprobs(m, ro.input_ids, ro.attention_mask, P, position_ids=pos)
        del m
        ref = completion_logprobs(scaled(path, 'float32', scale, True, True), ro.input_ids, ro.attention_mask, P,
                                  position_ids=pos)
    r = lambda a, b: rollout_parity(a, b, mask)['training/rollout_actor_probs_pearson_corr']
    keep = mask.bool()
    return {'scale': scale, 'fp32_logits': fp32_logits, 'fp32_residual': fp32_residual, 'tokens': int(mask.sum()),
            'generate_s': round(gen_s, 1), 'mean_nll_fp32': -ref[keep].mean().item(),
            'frac_p_gt_0.99': (ref[keep].exp() > 0.99).float().mean().item(),
            'pearson_rollout_actor': r(ro.logprobs, actor), 'pearson_rollout_fp32': r(ro.logprobs, ref),
            'pearson_actor_fp32': r(actor, ref),
            'diff_mean_rollout_actor': rollout_parity(ro.logprobs, actor, mask)['training/rollout_probs_diff_mean']}

VARIANTS = ((False, False), (True, False), (True, True))   # (fp32_logits, fp32_residual)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', required=True)
    ap.add_argument('--data', required=True, help='a gsm8k-format parquet file')
    ap.add_argument('--prompts', type=int, default=16)
    ap.add_argument('--tokens', type=int, default=128)
    ap.add_argument('--scales', type=float, nargs='+', default=[1.0, 2.5, 3.5])
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    tok = load_tokenizer(a.model)
    prompts, _ = encode_prompts(gsm8k_examples(read_rows(a.data, 'data')[:a.prompts], a.data), tok, 256)
    res = []
    for s in a.scales:
        for logits, residual in VARIANTS:
            res.append(measure(a.model, tok, prompts, s, logits, residual, a.tokens))
            print(json.dumps(res[-1]), flush=True)
    by = {(x['scale'], x['fp32_logits'], x['fp32_residual']): x['pearson_rollout_actor'] for x in res}
    print(json.dumps({'summary': {f'scale {s}': {f'logits {l} residual {r}':
                                                     {'r': by[s, l, r],
                                                      'mismatch_cut': (1 - by[s, False, False]) / (1 - by[s, l, r])}
                                                 for l, r in VARIANTS} for s in a.scales}}))

if __name__ == '__main__': main()
