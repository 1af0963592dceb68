"""Each recipe's reward gives verl-omni's score on verl-omni's own cases, by default (issue 40, "How it is scored").

The cases are facts taken from upstream: verl-omni `verl-project/verl-omni` at a1139baf, and verl at the commit it
pins, 8a694930. AVQA: the five cases of `tests/utils/reward_score/test_choice_reward_on_cpu.py` (lines 34-45).
MMK12 and GSM8K have no upstream test file; their cases are worked out from the lines of
`verl_omni/utils/reward_score/mmk12_reward.py` and verl's `verl/utils/reward_score/gsm8k.py` named beside each.
Every case is scored the way a run scores it: `score_batch` with the `reward` section of the recipe's config."""
import json
import pytest
from omni_gspo.config import RewardConfig, build_config
from omni_gspo.rewards import default_reward, score_batch


def recipe_scores(recipe:str, cases:list[tuple], **overrides)->list[dict]:
    "The reward dicts of `(data_source, response, ground_truth, extra_info)` cases under `recipe`'s reward config."
    rcfg = build_config(recipe, overrides={f'reward.{k}': v for k, v in overrides.items()}).reward
    _, details, metrics = score_batch(*map(list, zip(*cases)), rcfg)
    assert metrics['reward/errors'] == 0, details
    return details


# test_choice_reward_on_cpu.py, lines 37-41: (response, ground truth, expected score and accuracy)
CHOICE_CASES = [("reasoning <answer>B</answer>", "<answer>B</answer>", 1.0),
                ("<answer>A</answer>", "<answer>B</answer>", 0.0),
                ("The final answer is B.", "<answer>B</answer>", 0.0),
                ("<answer>b</answer>", "<answer>B</answer>", 0.0),
                ("<answer>A</answer><answer>B</answer>", "<answer>A</answer>", 1.0)]


def test_avqa_scores_upstream_choice_cases():
    "verl-omni's choice reward is a case-sensitive exact match of the first <answer> payload: `b` against B is 0."
    details = recipe_scores('avqa', [('avqa_r1_6k', r, gt, {}) for r, gt, _ in CHOICE_CASES])
    assert details == [{'score': s, 'accuracy': s} for _, _, s in CHOICE_CASES]
    for r, gt, s in CHOICE_CASES:   # the same through the built-in dispatch, with the config's defaults
        assert default_reward('avqa_r1_6k', r, gt) == {'score': s, 'accuracy': s}


def test_avqa_any_case_is_a_named_option():
    "reward.choice_case=any, ours: a one-letter reply matches in either case; longer payloads stay exact."
    cases = [('avqa_r1_6k', '<answer>b</answer>', '<answer>B</answer>', {}),
             ('avqa_r1_6k', '<answer>B</answer>', '<answer>b</answer>', {}),
             ('avqa_r1_6k', '<answer>b. rain</answer>', '<answer>B. rain</answer>', {})]
    assert [d['score'] for d in recipe_scores('avqa', cases, choice_case='any')] == [1.0, 1.0, 0.0]
    assert [d['score'] for d in recipe_scores('avqa', cases)] == [0.0, 0.0, 0.0]
    for recipe in ('gsm8k', 'mmk12', 'avqa'):
        assert build_config(recipe).reward.choice_case == 'exact'
    with pytest.raises(ValueError, match=r"reward\.choice_case"): build_config('avqa', {'reward.choice_case': 'lower'})


FULL = '<think>Since $1+1=2$, so the answer is $2$.</think><answer>$\\boxed{2}$</answer>'
OPTIONS = {'options': json.dumps({'A': '1', 'B': '\\frac{1}{2}', 'C': '3'})}
# (response, ground truth, extra_info, expected (accuracy, format_reward)); score = (accuracy + format) / 1.3
MMK12_CASES = [
    (FULL, '2', {}, (1.0, 0.3)),                                   # module docstring: correct, full format -> 1.0
    ('So the answer is $\\boxed{2}$.', '2', {}, (1.0, 0.0)),       # correct, no tags -> 0.769
    (FULL.replace('{2}', '{3}'), '2', {}, (0.0, 0.3)),             # wrong, full format -> 0.231
    ('<answer>$\\boxed{B}$</answer>', 'b', {}, (1.0, 0.3)),        # lines 75, 136: a ground truth 'b' is choice B
    ('<answer>$\\boxed{b}$</answer>', 'b', {}, (0.0, 0.3)),        # line 59: only capitals are choice letters
    ('<answer>A? no: C</answer>', 'C', {}, (1.0, 0.15)),           # line 85: the last standalone letter
    ('<answer>$\\boxed{\\frac{1}{2}}$</answer>', 'b', OPTIONS, (0.5, 0.3)),    # line 146: options[gt.upper()]
    ('<answer>$\\boxed{0.5}$</answer>', 'B', {'options': '{"B": 1/2}'}, (0.0, 0.3)),   # lines 142-145: not JSON
    ('<answer>$\\boxed{0.5}$</answer>', 'B', {'options': {'B': '1/2'}}, (0.0, 0.3)),   # not text: json.loads fails
    ('<answer> $\\boxed{30^\\circ}$ </answer>', '30°', {}, (1.0, 0.3)),        # line 56: angles normalised
    ('<answer>$\\boxed{2}$</answer><answer>$\\boxed{5}$</answer>', '2', {}, (1.0, 0.15)),   # line 99: two tags
]


def test_mmk12_scores_upstream_rule():
    details = recipe_scores('mmk12', [('mmk12', r, gt, info) for r, gt, info, _ in MMK12_CASES])
    for d, (r, gt, info, (acc, fmt)) in zip(details, MMK12_CASES):
        assert (d['accuracy'], d['format_reward']) == pytest.approx((acc, fmt)), (r, gt, info, d)
        assert d['score'] == pytest.approx((acc + fmt) / 1.3), (r, gt, info, d)


# verl/utils/reward_score/gsm8k.py at 8a694930: (response, ground truth, expected score with format_score 0)
GSM8K_CASES = [('So 3 + 4 = 7.\n#### 7', '7', 1.0),
               ('#### 7 no wait #### 9', '9', 1.0),                 # line 36: the last match counts
               ('#### 1,234', '1234', 1.0),                         # line 36: commas removed
               ('#### $18', '18', 0.0),                             # line 31: '$' is no number
               ('#### 7' + ' ' * 295, '7', 0.0),                    # lines 26-27: only the last 300 characters
               ('#### 7.0', '7', 0.0),                              # line 69: compared as strings
               ('The answer is 7', '7', 0.0)]                       # line 66: no match scores 0


def test_gsm8k_scores_upstream_rule():
    details = recipe_scores('gsm8k', [('openai/gsm8k', r, gt, {}) for r, gt, _ in GSM8K_CASES])
    assert [d['score'] for d in details] == [s for _, _, s in GSM8K_CASES]
    assert default_reward('openai/gsm8k', '#### 8', '7', rules=RewardConfig(format_score=0.1))['score'] == 0.1
