"""A reward with spread for benchmarks on random weights: the share of a response's characters that are ASCII letters.

A randomly initialised thinker samples every token of its 152k vocabulary, so every recipe's own reward scores 0, every
group has zero spread and every update is skipped as empty. This score varies between samples of one prompt, so the
advantages, the update and the weight sync all do their full work. Use: `reward.custom_function=bench/front_door/spread_reward.py:score`.
"""
def score(data_source, solution_str, ground_truth, extra_info):
    return sum(c.isascii() and c.isalpha() for c in solution_str) / max(len(solution_str), 1)
