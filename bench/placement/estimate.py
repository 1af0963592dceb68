"Expected step time of the upstream shapes, scaled from one H200's measurements (README.md states each assumption)."
GIB = 2**30
ROWS = 128 * 16                                  # prompts × samples of every upstream script
LENGTHS = {'short': (281, 512), 'cap': (4096, 12288)}   # (prompt, response): the measured rows; the preset's limits
KV_TOKEN = 98_304                                # bytes of K and V per token, all 48 layers (bf16, 4 KV heads × 128)
WEIGHTS = 59.08 * GIB                            # the thinker's bf16 weights (the plan's 'vLLM weights' at TP 1)
# measured, one H200, 48 layers, bench/front_door/README.md steady steps 2-3: 128 rows × (281 + 512) tokens
MEAS_TOKENS, MEAS_ROWS, MEAS_CTX = 128 * 793, 128, 281 + 256
UPDATE, OLDLP = MEAS_TOKENS / 17.3, MEAS_TOKENS / 5.1          # tokens/s per device: LoRA update, old log-probs
DECODE_STEP = (6.65 / 512, 7.80 / 512)                         # s per decode step at 128 rows
MEAS_BYTES = WEIGHTS + MEAS_ROWS * MEAS_CTX * KV_TOKEN         # bytes one decode step reads there
H200_BW = 4.8e12

SHAPES = {  # kv: the plan's 'vLLM KV cache' tokens per engine; bw, flops: per device, relative to an H200
    '4 x H800, LoRA, colocated, TP 2': dict(devices=4, actor=4, tp=2, kv=514_658, seqs=256, bw=3.35e12, flops=(1, 1),
                                            full=False, separate=False, switch=(1.3 + 1.8,) * 2, dp=(0.8, 1.0)),
    '16 x 910C, full, colocated, TP 4': dict(devices=16, actor=16, tp=4, kv=905_690, seqs=128, bw=1.6e12,
                                             flops=(0.3, 0.5), full=True, separate=False,
                                             switch=(1.3 + 4, 3 * (1.3 + 4)), dp=(0.6, 0.9)),
    '8 x H200, LoRA, colocated, TP 1': dict(devices=8, actor=8, tp=1, kv=391_888, seqs=256, bw=H200_BW, flops=(1, 1),
                                            full=False, separate=False, switch=(1.3 + 1.8,) * 2, dp=(0.8, 1.0)),
    '8 x H200, LoRA, 2 rollout + 6 actor, one-step-off': dict(devices=8, actor=6, rollout=2, tp=1, kv=391_888,
        seqs=256, bw=H200_BW, flops=(1, 1), full=False, separate=True, switch=(0.3, 1.0), dp=(0.8, 1.0)),
}
TP_EFF = (0.6, 0.9)            # decode speed of a TP engine per device, relative to TP 1 (not measured)
ATTN = {'short': (1, 1), 'cap': (1.2, 2.0)}   # actor cost per token at 16k rows relative to 793 (attention, causal)
FULL = (1.33, 1.5)             # full-parameter fwd+bwd relative to LoRA (weight gradients of every matrix)
OPTIM_CPU = (5, 20)            # s: Adam on the host over the rank's 1/16 of 31.7 B parameters, plus the copies

def generate(s, prompt, resp, fast):
    "Seconds for the rollout group to sample ROWS rows (best case if `fast`)."
    engines = s.get('rollout', s['devices']) // s['tp']
    rows = ROWS / engines
    ctx = prompt + resp / 2                                           # mean context while decoding
    conc = min(s['seqs'], rows, s['kv'] // (prompt + resp))          # rows the KV cache holds at full length
    read = (WEIGHTS + conc * ctx * KV_TOKEN) / s['tp']               # bytes one rank reads per decode step
    eff = 1 if s['tp'] == 1 else TP_EFF[fast]
    step = DECODE_STEP[not fast] * read / MEAS_BYTES * H200_BW / s['bw'] / eff
    prefill = rows * prompt / (OLDLP * s['tp'] * s['flops'][fast] * eff)
    return rows * resp / conc * step + prefill

def actor(s, prompt, resp, fast, kind):
    "Seconds of old log-probs and update over the actor group."
    tokens = ROWS * (prompt + resp)
    rate = s['actor'] * s['flops'][fast] * s['dp'][fast] / ATTN[kind][not fast]
    upd = tokens / (UPDATE * rate) * (FULL[not fast] if s['full'] else 1)
    return tokens / (OLDLP * rate), upd + (OPTIM_CPU[not fast] if s['full'] else 0)

if __name__ == '__main__':
    print('| shape | rows | generate s | old log-probs s | update s | switch / sync s | step s | tok/s/device |')
    print('|---|---|---|---|---|---|---|---|')
    for name, s in SHAPES.items():
        for kind, (p, r) in LENGTHS.items():
            lo, hi = [(generate(s, p, r, f), *actor(s, p, r, f, kind), s['switch'][not f]) for f in (True, False)]
            step = [max(g, o + u) + w if s['separate'] else g + o + u + w for g, o, u, w in (lo, hi)]
            rng = lambda a, b: f'{a:,.0f}–{b:,.0f}' if round(a) != round(b) else f'{a:,.0f}'
            cols = ' | '.join(rng(a, b) for a, b in zip(lo, hi))
            tps = ROWS * (p + r) / s['devices']
            print(f'| {name} | {kind} ({p} + {r}) | {cols} | {rng(*step)} | {rng(tps / step[1], tps / step[0])} |')
