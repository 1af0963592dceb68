"""Packed vs padded scoring of one micro-batch on the tiny Qwen3-Omni thinker, on CPU; prints JSON.

One micro-batch of 8 rows, left-padded prompts (block width `--prompt-len`) then right-padded responses
(`--response-len`), scored by `completion_logprobs` as the actor does (fp32, the adapter's position ids): padded (the
`[rows, P+R]` block with an attention mask) and packed (the rows' real tokens as one row, positions restarting per row).
Three cases: `unequal` (one full-length row, seven short ones: most of the block is padding), `spread` (lengths from
1/8 to all of the block: 44% padding) and `equal` (eight full-length rows: no padding, packing only changes the
attention layout). Each timing is the mean of `--reps` runs
after one warm-up run, for the forward alone (no grad) and forward + backward, per attention implementation; the model
is loaded through `load_model` with `model.attn_implementation`'s values (the thinker supports sdpa and eager on CPU;
it has no flex attention in transformers 5.17, and flash kernels need CUDA).

    cd /work/main && .venv/bin/python bench/packing/cpu_thinker.py > bench/packing/result_cpu.json
"""
from __future__ import annotations
import argparse, json, os, platform, time
import torch, transformers
from omni_gspo.model import ThinkerAdapter, load_model, load_tokenizer, resolve_model_path
from omni_gspo.logprobs import completion_logprobs

# one long row, seven short ones: 82% padding
CASES = {'unequal': lambda P, R: [(P, R)] + [(P // 18, R // 8)] * 7,
         # lengths 1/8 .. 8/8 of the block: 44% padding
         'spread': lambda P, R: [(P * k // 8, R * k // 8) for k in range(1, 9)],
         'equal': lambda P, R: [(P, R)] * 8}                                  # no padding to save

def block(lens:list[tuple[int, int]], # (prompt, response) tokens per row
          P:int, R:int, vocab:int, pad_id:int, seed:int=0)->tuple[torch.Tensor, torch.Tensor]:
    "Random token ids [rows, P+R] and their attention mask: prompts left-padded to `P`, responses right-padded to `R`."
    am = torch.tensor([[0] * (P - p) + [1] * (p + r) + [0] * (R - r) for p, r in lens])
    ids = torch.randint(20, vocab, am.shape, generator=torch.Generator().manual_seed(seed))
    return ids.masked_fill(am == 0, pad_id), am

def score(model, ids:torch.Tensor, am:torch.Tensor, P:int, packed:bool, grad:bool):
    "Response log-probs of the block, padded or packed, as the actor computes them; with `grad`, also their backward."
    ad = ThinkerAdapter()
    pos = (ad.packed_position_ids if packed else ad.position_ids)(model, ids, am, {})
    with torch.set_grad_enabled(grad):
        lp = completion_logprobs(model, ids, am, P, position_ids=pos, packed=packed)
        if grad: lp.sum().backward()

def seconds(reps:int, *args)->float:
    "Mean wall time of `score(*args)` over `reps` runs after one warm-up run."
    score(*args)
    t = time.perf_counter()
    for _ in range(reps): score(*args)
    return round((time.perf_counter() - t) / reps, 4)

def bench_case(model, lens, P, R, vocab, pad_id, attn:str, reps:int)->dict:
    "Padded and packed seconds (forward, forward + backward) for one case and one attention implementation."
    ids, am = block(lens, P, R, vocab, pad_id)
    out = {}
    for grad in (False, True):
        k = f"{attn}_{'fwd_bwd' if grad else 'fwd'}"
        out[k + '_padded_s'], out[k + '_packed_s'] = (seconds(reps, model, ids, am, P, packed, grad)
                                                      for packed in (False, True))
    return out

def machine()->dict:
    "What the numbers were measured on (the 1-minute load average says how busy the shared machine was)."
    return {'cpu': platform.processor() or platform.machine(), 'cpu_count': os.cpu_count(),
            'load_avg_1m': round(os.getloadavg()[0], 2), 'torch': torch.__version__,
            'transformers': transformers.__version__}

def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--prompt-len', type=int, default=448, help='P: the prompt block width (the longest prompt)')
    p.add_argument('--response-len', type=int, default=64, help='R: the response block width (the longest response)')
    p.add_argument('--attn', nargs='+', default=['sdpa', 'eager'],
                   help='attention implementations (model.attn_implementation values)')
    p.add_argument('--threads', type=int, default=1, help='torch CPU threads')
    p.add_argument('--reps', type=int, default=3, help='timed runs per measurement, after one warm-up')
    p.add_argument('--warm-start-steps', type=int, default=300,
                   help="the tiny thinker's warm start (model.warm_start_steps; 300 = the default, cached)")
    a = p.parse_args()
    torch.manual_seed(0); torch.set_num_threads(a.threads)
    path = resolve_model_path('', a.warm_start_steps)
    tok = load_tokenizer(path)
    P, R = a.prompt_len, a.response_len
    out = {'model': 'tiny Qwen3-Omni thinker (small vocabulary), fp32', 'threads': a.threads, 'reps': a.reps,
           'prompt_len': P, 'response_len': R, 'machine_before': machine()}
    for case, make in CASES.items():
        lens = make(P, R)
        out[case] = {'rows': len(lens), 'padded_positions': len(lens) * (P + R),
                     'packed_positions': sum(p + r for p, r in lens)}
    for attn in a.attn:
        model = load_model(path, 'float32', torch.device('cpu'), attn).eval()
        for case, make in CASES.items():
            out[case] |= bench_case(model, make(P, R), P, R, len(tok), tok.pad_token_id, attn, a.reps)
    out['machine_after'] = machine()
    print(json.dumps(out, indent=1))

if __name__ == '__main__': main()
