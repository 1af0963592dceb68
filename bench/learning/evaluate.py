"""Greedy accuracy of the policy (base model, or base + a LoRA checkpoint) on gsm8k-format files, two ways.

- `strict`: the gsm8k recipe's built-in reward (`gsm8k_reward`, verl's rule: the last `#### N` in the last 300
  characters equals the reference);
- `lenient`: the final answer, `#### N` or `\\boxed{N}`, equals the reference (`reward.py`'s `acc`, which this run
  trains on and the trainer's `val-core/openai/gsm8k/acc/mean@1` reports).

Prompts are built exactly as in training (`gsm8k_examples` + the chat template, `encode_prompts`) and decoded with
the trainer's own engine (`HFEngine`, greedy), in the checkpoint's dtype, on one device.

    python bench/learning/evaluate.py --model /tmp/learn/qwen05 [--adapter RUN/checkpoints/step_N] \\
        --data heldout=bench/learning/data/heldout.parquet gsm8k100=bench/learning/data/gsm8k100.parquet \\
        --max-new-tokens 512 --out eval_before.json
"""
from __future__ import annotations
import argparse, json, time
from pathlib import Path
import torch
from omni_gspo.config import RolloutConfig
from omni_gspo.data import encode_prompts, read_rows
from omni_gspo.tasks.gsm8k import gsm8k_examples, gsm8k_reward
from omni_gspo.model import load_model, load_tokenizer
from omni_gspo.platform import torch_device
from omni_gspo.rollout import HFEngine
from reward import compute_score   # bench/learning/reward.py, beside this script

def load_policy(model:Path, adapter:Path|None, dtype:str, device):
    "The base checkpoint, with the LoRA adapter saved at `adapter` merged in when given, in eval mode."
    m = load_model(model, dtype, device)
    if adapter is not None:
        from peft import PeftModel
        m = PeftModel.from_pretrained(m, adapter).merge_and_unload()
    return m.eval()

def score(text:str, gold:str)->dict:
    "Strict (the gsm8k recipe's reward) and lenient (this run's reward's `acc`) correctness of one response."
    return {'strict': gsm8k_reward(text, gold), 'lenient': compute_score('', text, gold)['acc'],
            'has_hashes': float('####' in text)}

def summarise(rows:list[dict])->dict:
    "Mean of each score over `rows`, with their count."
    keys = ('strict', 'lenient', 'has_hashes', 'clipped', 'length')
    return {'n': len(rows)} | {k: sum(r[k] for r in rows) / max(len(rows), 1) for k in keys}

def evaluate(engine, tok, path:Path, max_prompt_length:int, batch:int)->tuple[dict, list[dict]]:
    "Summary (overall and per `split` column, if any) and per-row results for the gsm8k-format file `path`."
    rows = read_rows(path, 'eval file')
    prompts, dropped = encode_prompts(gsm8k_examples(rows, str(path)), tok, max_prompt_length)
    if dropped:
        raise ValueError(f"{path}: {dropped} prompts longer than {max_prompt_length} tokens; raise --max-prompt-length")
    out = []
    for s in range(0, len(prompts), batch):
        chunk = prompts[s:s + batch]
        ro = engine.generate(chunk, n=1, greedy=True)
        for p, ids, m, why in zip(chunk, ro.response_ids.cpu(), ro.response_mask.cpu(), ro.finish_reasons):
            text = tok.decode(ids[m.bool()], skip_special_tokens=True)
            r = rows[p.example.index]
            out.append({'split': r.get('split', ''), 'id_orig': r.get('id_orig'), 'gold': p.example.ground_truth,
                        'clipped': float(why == 'length'), 'length': int(m.sum()),
                        **score(text, p.example.ground_truth), 'response': text})
    summary = {'all': summarise(out)}
    for sp in sorted({r['split'] for r in out} - {''}): summary[sp] = summarise([r for r in out if r['split'] == sp])
    return summary, out

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', type=Path, required=True)
    ap.add_argument('--adapter', type=Path, help='a trainer checkpoint folder (LoRA adapter) to apply')
    ap.add_argument('--data', nargs='+', required=True, help='NAME=FILE pairs')
    ap.add_argument('--dtype', default='bfloat16')
    ap.add_argument('--device', default='gpu')
    ap.add_argument('--max-new-tokens', type=int, default=512)
    ap.add_argument('--max-prompt-length', type=int, default=384)
    ap.add_argument('--batch', type=int, default=512)
    ap.add_argument('--out', type=Path, required=True, help='summary JSON; per-row responses go next to it (.jsonl)')
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    tok = load_tokenizer(a.model)
    engine = HFEngine(load_policy(a.model, a.adapter, a.dtype, torch_device(a.device)), tok,
                      RolloutConfig(response_length=a.max_new_tokens))
    res = {'model': str(a.model), 'adapter': str(a.adapter) if a.adapter else None, 'max_new_tokens': a.max_new_tokens}
    rows = []
    with torch.no_grad():
        for item in a.data:
            name, _, path = item.partition('=')
            res[name], r = evaluate(engine, tok, Path(path), a.max_prompt_length, a.batch)
            rows += [{'set': name, **x} for x in r]
            print(name, json.dumps(res[name]), flush=True)
    res['seconds'] = time.perf_counter() - t0
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=1))
    a.out.with_suffix('.jsonl').write_text(''.join(json.dumps(x) + '\n' for x in rows))
    print(f"{a.out}: {res['seconds']:.1f} s")

if __name__ == '__main__': main()
