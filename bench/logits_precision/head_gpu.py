"""Benchmark (device): the output layer's cost and numbers in each precision, at the Qwen2.5-0.5B shape (issue 9).

    python3 bench/logits_precision/head_gpu.py [--tokens 256 16384] [--out FILE.jsonl]
    python3 bench/logits_precision/head_gpu.py --cpu --tokens 64 --vocab 4096   # a check of the script

The fourth learning run's step cost 20.0 s against 14.4 s, most of it attributed to the fp32 output layer
(`03b_model` `_fp32_linear`: input and weight cast to fp32 on every call, plain fp32 matrix product). This times, side
by side in one process, the ways of computing the logits from the fp32 final hidden state (the fp32 residual stream's
output) and a bf16 weight:
`bf16` (input rounded to bf16, bf16 logits), `fp32` (what the package does), `fp32_tf32` (the same with TF32 tensor
cores allowed), `fp32_cached` (fp32 weight copy made once: the recast's share), `bf16_fp32_out` (bf16 input and weight,
fp32 accumulation written out as fp32: `torch.mm(..., out_dtype=float32)`). Forward alone (a scoring pass or a decode
step) and forward+backward to the input (the update), median of `--iters` CUDA-timed calls. Numbers: the largest
difference of each variant's log-probs of random targets from an fp64 reference.
"""
from __future__ import annotations
import argparse, json, statistics, time
import torch, torch.nn.functional as F

def args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cpu', action='store_true')
    ap.add_argument('--tokens', type=int, nargs='+', default=[256, 16384])
    ap.add_argument('--hidden', type=int, default=896)
    ap.add_argument('--vocab', type=int, default=151936)
    ap.add_argument('--iters', type=int, default=20)
    ap.add_argument('--out', default='')
    return ap.parse_args()

def variants(w:torch.Tensor)->dict:
    "Logits from an fp32 hidden state `h` and the bf16 weight `w`, one function per precision."
    w32 = w.float()
    return {'bf16': lambda h: F.linear(h.to(w.dtype), w).float(),
            'fp32': lambda h: F.linear(h.float(), w.float()),
            'fp32_tf32': lambda h: F.linear(h.float(), w.float()),
            'fp32_cached': lambda h: F.linear(h.float(), w32),
            'bf16_fp32_out': lambda h: torch.mm(h.to(w.dtype), w.t(), out_dtype=torch.float32)}

def timed(fn, iters:int, cuda:bool)->float:
    "Median milliseconds of `fn()` over `iters` calls after two warm-up calls."
    for _ in range(2): fn()
    ts = []
    for _ in range(iters):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
        else:
            t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)

def run_one(name:str, fn, h:torch.Tensor, target:torch.Tensor, ref:torch.Tensor, iters:int, cuda:bool)->dict:
    torch.backends.cuda.matmul.allow_tf32 = name == 'fp32_tf32'
    try: lp = torch.log_softmax(fn(h).double(), -1).gather(-1, target[:, None])[:, 0]
    except (RuntimeError, TypeError) as e: return {'variant': name, 'error': f'{type(e).__name__}: {e}'[:300]}
    hg = h.detach().requires_grad_()
    def fwd_bwd(): fn(hg).logsumexp(-1).sum().backward()
    r = {'variant': name, 'fwd_ms': round(timed(lambda: fn(h), iters, cuda), 3),
         'logprob_max_abs_diff_vs_fp64': float((lp - ref).abs().max())}
    try: r['fwd_bwd_ms'] = round(timed(fwd_bwd, iters, cuda), 3)
    except RuntimeError as e: r['fwd_bwd_error'] = str(e)[:200]   # torch.mm with out_dtype has no derivative
    torch.backends.cuda.matmul.allow_tf32 = False
    return r

def main():
    a = args(); cuda = not a.cpu and torch.cuda.is_available(); dev = 'cuda' if cuda else 'cpu'
    g = torch.Generator(device=dev).manual_seed(0)
    w = (torch.randn(a.vocab, a.hidden, device=dev, generator=g) * 0.02).bfloat16()
    for n in a.tokens:
        h = torch.randn(n, a.hidden, device=dev, generator=g) * 3   # an fp32 final hidden state (after the final norm)
        target = torch.randint(0, a.vocab, (n,), device=dev, generator=g)
        ref = torch.log_softmax(F.linear(h.double(), w.double()), -1).gather(-1, target[:, None])[:, 0]
        for name, fn in variants(w).items():
            r = {'bench': 'head_precision', 'device': torch.cuda.get_device_name(0) if cuda else 'cpu',
                 'torch': torch.__version__, 'tokens': n, 'hidden': a.hidden,
                 'vocab': a.vocab} | run_one(name, fn, h, target, ref, a.iters, cuda)
            print('RESULT', json.dumps(r), flush=True)
            if a.out:
                with open(a.out, 'a') as f: f.write(json.dumps(r) + '\n')

if __name__ == '__main__': main()
