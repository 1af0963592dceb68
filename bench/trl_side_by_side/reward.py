"""The side-by-side run's reward (`reward.custom_function=bench/trl_side_by_side/reward.py:compute_score`).

With random weights no response ever ends in the right `#### N`: every reward is 0, every group ties, every GRPO
advantage is 0. TRL then still runs each optimizer step's forward and backward (its loss is exactly 0.0), but our actor
skips a mini-batch with nothing to learn (`Actor._step` in 07_actor), which would time generation against generation +
training. So the score here is the gsm8k recipe's own reward plus a deterministic tie-breaker below 1e-3 taken from the
response text: groups never tie, and all 4 updates of a step run as they would on a model that learns.
"""
from __future__ import annotations
import zlib
from omni_gspo.tasks.gsm8k import gsm8k_reward

TIE_BREAK = 1e-3   # far below the 1.0 of a right answer: the ranking of right and wrong answers is the recipe's

def compute_score(data_source:str, solution_str:str, ground_truth:str, extra_info:dict|None=None)->dict:
    "verl-style custom reward: `{'score', 'acc'}`, score = the gsm8k reward + a tie-breaker in [0, 1e-3) from the text."
    acc = gsm8k_reward(solution_str, ground_truth)
    return {'score': acc + TIE_BREAK * (zlib.crc32(solution_str.encode()) % 1000) / 1000, 'acc': acc}
