"""The learning proof's reward (`reward.custom_function=bench/learning/reward.py:compute_score`).

Qwen2.5-Coder-0.5B-Instruct answers grade-school problems in `\\boxed{N}`, even when the prompt asks for `#### N`:
greedy, it wrote `####` in 0 of 10 held-out problems on the CPU, so the gsm8k recipe's strict reward (the last
`#### N` must equal the reference) scores nearly every sample 0 and GRPO gets no signal. This reward reads the final
answer in either form and checks it with `math_verify`:

- `acc`: 1 if the final answer (the last `#### N`, else the last `\\boxed{...}`) equals the reference, else 0; this is
  what the trainer's validation reports (`val-core/openai/gsm8k/acc/mean@1`) and what evaluate.py calls `lenient`;
- `score` (what GRPO optimises): `acc`. A first run (2026-12-01, session 1) scored a right `\\boxed{}` answer 0.8
  and a right `#### N` 1.0: the clearest signal in each group was then the format, the policy moved there first, and
  held-out correctness did not improve. This run rewards correctness alone; `hashes` is logged to show the format.
"""
from __future__ import annotations
import re
from omni_gspo.tasks.mmk12 import math_equal

_HASHES = re.compile(r'#### \$?(\-?[0-9\.\,]+)')

def last_boxed(text:str)->str|None:
    "Content of the last `\\boxed{...}` in `text` (braces balanced), or None."
    i = text.rfind('\\boxed{')
    if i < 0: return None
    depth, start = 0, i + len('\\boxed{')
    for j in range(start, len(text)):
        depth += {'{': 1, '}': -1}.get(text[j], 0)
        if depth < 0: return text[start:j]
    return None

def final_answer(text:str)->tuple[str|None, bool]:
    "The response's final answer and whether it came as `#### N` (checked first, in the last 300 characters)."
    found = _HASHES.findall(text[-300:])
    if found: return found[-1].replace(',', '').rstrip('.'), True
    return last_boxed(text), False

def compute_score(data_source:str, solution_str:str, ground_truth:str, extra_info:dict|None=None)->dict:
    "verl-style custom reward: `{'score', 'acc', 'hashes'}` of one response against the reference number."
    ans, hashes = final_answer(solution_str)
    acc = float(ans is not None and math_equal('\\boxed{' + ans + '}', ground_truth) == 1.0)
    return {'score': acc, 'acc': acc, 'hashes': float(hashes)}
