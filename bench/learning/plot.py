"""The learning proof's curve (PNG for the README, HTML to explore) and `result.json`, from what the GPU run wrote.

Reads `metrics.jsonl` (the trainer's per-step metrics), `eval_before.json` and `eval_after.json` (evaluate.py), all
in `--dir`; writes `curve.png` (matplotlib), `curve.html` (plotly) and `result.json` there.

    python bench/learning/plot.py --dir bench/learning --train-minutes 19.7
"""
from __future__ import annotations
import argparse, json
from pathlib import Path

VAL = 'val-core/openai/gsm8k/acc/mean@1'
PEARSON = 'training/rollout_actor_probs_pearson_corr'
# evaluate.py's `split` values
SPLIT_NAMES = {'heldout-template': 'unseen_templates', 'train-template': 'seen_templates'}

def eval_sets(ev:dict)->list[tuple[str, str]]:
    """(file name, split) of every score in an evaluate.py summary: each file's 'all', and its splits where it has
    several."""
    return [(k, sp) for k, v in ev.items() if isinstance(v, dict) and 'all' in v
            for sp in v if sp == 'all' or len(v) > 2]

def set_name(key:str, sp:str)->str:
    "`result.json`'s name of file `key`'s split `sp`: 'gsm8k100', 'gsm8k100_unseen_templates', ..."
    return key if sp == 'all' else f"{key}_{SPLIT_NAMES.get(sp, sp.replace('-', '_'))}"

def rolling(xs:list[float], k:int=5)->list[float]:
    "Trailing mean over up to `k` values."
    return [sum(xs[max(0, i - k + 1):i + 1]) / len(xs[max(0, i - k + 1):i + 1]) for i in range(len(xs))]

def series(rows:list[dict], key:str)->tuple[list[int], list[float]]:
    "Steps and values of `key`, where a row has it."
    pts = [(r['training/global_step'], r[key]) for r in rows if key in r]
    return [s for s, _ in pts], [v for _, v in pts]

def panels(rows:list[dict], before:dict, after:dict)->list[dict]:
    "The four panels as data: title, y label, and lines (name, xs, ys, style)."
    last = rows[-1]['training/global_step']
    steps, rew = series(rows, 'reward/mean')
    _, acc_s = series(rows, 'reward/openai/gsm8k/acc/mean')
    _, hashes = series(rows, 'reward/openai/gsm8k/hashes/mean')
    acc = [(f"{set_name(key, sp)}, {before[key][sp]['n']}", [0, last],
            [before[key][sp]['lenient'], after[key][sp]['lenient']], ':')
           for key, sp in eval_sets(before)]
    vs, vv = series(rows, VAL)
    return [
        {'title': 'sampled responses (T=1), per training step', 'ylabel': 'fraction',
         'lines': [('reward = right answer', steps, rew, '-'),
                   ('right answer, 5-step mean', steps, rolling(acc_s), '-'),
                   ("answer written as '#### N'", steps, hashes, '--')]},
        {'title': 'greedy accuracy (right answer in any form), before and after', 'ylabel': 'accuracy',
         'lines': [('trainer validation (held-out, 400 tokens)', vs, vv, '-')] + acc},
        {'title': 'rollout vs actor probabilities (bf16)', 'ylabel': 'Pearson correlation',
         'lines': [('per step', *series(rows, PEARSON), '-'), ('target 0.999', [1, last], [0.999, 0.999], '--')]},
        {'title': 'response length (tokens)', 'ylabel': 'tokens',
         'lines': [('mean', *series(rows, 'response_length/mean'), '-')]},
    ]

def write_png(ps:list[dict], path:Path):
    import matplotlib; matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 2, figsize=(12, 8))
    for ax, p in zip(axs.flat, ps):
        for i, (name, xs, ys, style) in enumerate(p['lines']):
            ax.plot(xs, ys, style, marker='o' if len(xs) <= 2 else None, ms=4, label=name)
        ax.set_title(p['title'], fontsize=10); ax.set_xlabel('training step'); ax.set_ylabel(p['ylabel'])
        ax.grid(alpha=.3)
        ax.legend(fontsize=7)
    fig.suptitle('GSPO + LoRA on Qwen2.5-Coder-0.5B-Instruct (bf16), one H200', fontsize=12)
    fig.tight_layout(); fig.savefig(path, dpi=110); plt.close(fig)

def write_html(ps:list[dict], path:Path):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=2, cols=2, subplot_titles=[p['title'] for p in ps])
    dash = {'-': 'solid', ':': 'dot', '--': 'dash'}
    for i, p in enumerate(ps):
        for name, xs, ys, style in p['lines']:
            fig.add_trace(go.Scatter(x=xs, y=ys, name=name, line={'dash': dash[style]},
                                     mode='lines+markers' if len(xs) <= 2 else 'lines'),
                          row=i // 2 + 1, col=i % 2 + 1)
    fig.update_layout(height=800, title='GSPO + LoRA on Qwen2.5-Coder-0.5B-Instruct (bf16), one H200')
    path.write_text(fig.to_html(include_plotlyjs='cdn'))

def result(rows:list[dict], before:dict, after:dict, train_minutes:float)->dict:
    "The headline numbers (fractions in 0-1); `lenient` counts a right answer in any format, `strict` only '#### N'."
    r = {f'{key}_n': before[key]['all']['n'] for key, sp in eval_sets(before) if sp == 'all'} | {
         'train_minutes': train_minutes, 'steps': rows[-1]['training/global_step'],
         'min_probs_pearson': min(x[PEARSON] for x in rows)}
    for kind in ('lenient', 'strict'):
        sfx = '' if kind == 'lenient' else '_strict'
        for key, sp in eval_sets(before):
            r[f'{set_name(key, sp)}_acc_before{sfx}'] = before[key][sp][kind]
            r[f'{set_name(key, sp)}_acc_after{sfx}'] = after[key][sp][kind]
    vs = [x for x in rows if VAL in x]
    r['val_lenient_first_last'] = [vs[0][VAL], vs[-1][VAL]] if vs else None
    return r

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dir', type=Path, default=Path(__file__).parent)
    ap.add_argument('--train-minutes', type=float, required=True, help='wall-clock minutes of the training legs')
    a = ap.parse_args(argv)
    rows = [json.loads(l) for l in (a.dir/'metrics.jsonl').read_text().splitlines() if l.strip()]
    before, after = (json.loads((a.dir/f'eval_{w}.json').read_text()) for w in ('before', 'after'))
    ps = panels(rows, before, after)
    write_png(ps, a.dir/'curve.png'); write_html(ps, a.dir/'curve.html')
    res = result(rows, before, after, a.train_minutes)
    (a.dir/'result.json').write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))

if __name__ == '__main__': main()
