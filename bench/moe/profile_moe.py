"""Where does the Qwen3-Omni thinker's MoE block spend its time? One H200, real widths (hidden 2048, 128 experts of
768, 8 active), random bf16, transformers' own `Qwen3OmniMoeThinkerTextSparseMoeBlock`.

Prints one JSON line per measurement: the block forward at decode sizes (64 / 256 tokens) and its forward+backward at
training sizes (8,192 tokens; experts frozen, input gradient only, as LoRA on attention trains), for each experts
implementation transformers offers, then the raw `grouped_mm` calls alone, then a profiler table of the top kernels.

    python3 bench/moe/profile_moe.py            # H200
    python  bench/moe/profile_moe.py --cpu      # a check of the script, tiny widths
"""
import argparse, json, sys, time
import torch
sys.path.insert(0, __file__.rsplit('/', 2)[0] + '/memory_plan')
from thinker import thinker_config
from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeThinkerTextSparseMoeBlock

def timed(fn, iters:int, sync):
    "Median seconds of `iters` calls of `fn` after 3 warm-up calls."
    for _ in range(3): fn()
    ts = []
    for _ in range(iters):
        sync(); t = time.perf_counter(); fn(); sync(); ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]

def block(cfg, impl, device, dtype):
    "One MoE block with random weights and the experts implementation `impl`."
    tc = cfg.text_config
    tc._experts_implementation = impl
    torch.manual_seed(0)
    b = Qwen3OmniMoeThinkerTextSparseMoeBlock(tc).to(device, dtype)
    with torch.no_grad():
        for p in b.parameters(): p.normal_(0, 0.02)
    return b.requires_grad_(False)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cpu', action='store_true')
    ap.add_argument('--iters', type=int, default=10)
    a = ap.parse_args()
    device = 'cpu' if a.cpu else 'cuda'
    dtype = torch.float32 if a.cpu else torch.bfloat16
    sync = (lambda: None) if a.cpu else torch.cuda.synchronize
    cfg = thinker_config(tiny=a.cpu, layers=1)
    tc = cfg.text_config
    H, I, E, K = tc.hidden_size, tc.moe_intermediate_size, tc.num_experts, tc.num_experts_per_tok
    decode, train = ([8, 32], [256]) if a.cpu else ([64, 256], [8192, 16384])
    out = lambda **r: print(json.dumps(r), flush=True)
    for impl in ['grouped_mm', 'batched_mm', 'eager']:
        b = block(cfg, impl, device, dtype)
        for T in decode:
            x = torch.randn(1, T, H, device=device, dtype=dtype)
            with torch.no_grad(): s = timed(lambda: b(x), a.iters, sync)
            out(what='block_fwd', impl=impl, tokens=T, ms=round(s * 1e3, 3))
        if impl == 'batched_mm': continue
        for T in train:
            x = torch.randn(1, T, H, device=device, dtype=dtype, requires_grad=True)
            g = torch.randn_like(x)
            def fb(): b(x).backward(g)
            with torch.no_grad(): sf = timed(lambda: b(x), a.iters, sync)
            s = timed(fb, a.iters, sync)
            flop = 2 * T * K * 3 * H * I   # forward matrix work of the experts
            out(what='block_fwd_bwd', impl=impl, tokens=T, fwd_ms=round(sf * 1e3, 2), fwd_bwd_ms=round(s * 1e3, 2),
                fwd_tflops=round(flop / sf / 1e12, 1), fwd_bwd_tflops=round(2 * flop / s / 1e12, 1))
        del b
    # the grouped matmul alone, uniform routing, weight as transformers passes it (a transposed view) and contiguous
    w = torch.randn(E, 2 * I, H, device=device, dtype=dtype) * 0.02
    gmm = getattr(torch.nn.functional, 'grouped_mm', None) or torch._grouped_mm
    for T in decode + train:
        rows = T * K
        offs = torch.cumsum(torch.full((E,), rows // E, device=device, dtype=torch.int32), 0, dtype=torch.int32)
        xs = torch.randn(rows, H, device=device, dtype=dtype)
        for layout, wt in [('transposed_view', w.transpose(-2, -1)), ('contiguous', w.transpose(-2, -1).contiguous())]:
            s = timed(lambda: gmm(xs, wt, offs=offs), a.iters, sync)
            out(what='grouped_mm_gate_up', layout=layout, rows=rows, ms=round(s * 1e3, 3),
                tflops=round(2 * rows * H * 2 * I / s / 1e12, 1), weight_gb_per_s=round(w.numel() * 2 / s / 1e9))
    if a.cpu: return
    layer_profile(cfg, device, dtype, sync)
    from torch.profiler import profile, ProfilerActivity
    b = block(cfg, 'grouped_mm', device, dtype)
    for T, train_step in [(64, False), (8192, True)]:
        x = torch.randn(1, T, H, device=device, dtype=dtype, requires_grad=train_step)
        step = (lambda: b(x).sum().backward()) if train_step else (lambda: b(x))
        for _ in range(3): step()
        sync()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(5): step()
            sync()
        print(f'== profile tokens={T} train={train_step} (5 calls)')
        print(p.key_averages().table(sort_by='cuda_time_total', row_limit=18, max_name_column_width=70))

def layer_profile(cfg, device, dtype, sync, layers:int=4, T:int=8192):
    "Forward+backward of a `layers`-layer text decoder (frozen, input gradient only) at T tokens: time and top kernels."
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeThinkerTextModel
    from torch.profiler import profile, ProfilerActivity
    tc = cfg.text_config
    tc.num_hidden_layers, tc._experts_implementation, tc._attn_implementation = layers, 'grouped_mm', 'sdpa'
    torch.manual_seed(0)
    m = Qwen3OmniMoeThinkerTextModel(tc).to(device, dtype)
    with torch.no_grad():
        for n, p in m.named_parameters(): p.fill_(1.0) if 'norm' in n else p.normal_(0, 0.02)
    m.requires_grad_(False)
    rows = 8
    x = torch.randn(rows, T // rows, tc.hidden_size, device=device, dtype=dtype, requires_grad=True)
    step = lambda: m(inputs_embeds=x).last_hidden_state.float().pow(2).mean().backward()
    s = timed(step, 5, sync)
    with torch.no_grad(): sf = timed(lambda: m(inputs_embeds=x), 5, sync)
    print(json.dumps(dict(what='text_layers_fwd_bwd', layers=layers, tokens=T, fwd_ms=round(sf * 1e3, 1),
                          fwd_bwd_ms=round(s * 1e3, 1), tokens_per_s_fwd_bwd=round(T / s))), flush=True)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(3): step()
        sync()
    print(f'== profile {layers} text layers, fwd+bwd, tokens={T} (3 calls)')
    print(p.key_averages().table(sort_by='cuda_time_total', row_limit=25, max_name_column_width=70))


if __name__ == '__main__': main()
