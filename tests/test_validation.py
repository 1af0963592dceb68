"""Validation as verl-omni measures it (issue 40, "How it is measured"; issue 41): sampled validation (`rollout.val`:
n, temperature, top_p, seeded), `trainer.val_before_train`, and verl's `mean@n` / `best@n` / `maj@n` metrics.

The aggregation is checked against numbers verl's own `process_validation_metrics` gives on the same scores (verl at
the commit verl-omni pins, 8a694930, `verl/trainer/ppo/metric_utils.py` lines 556-720, section names as
`ray_trainer.py::_val_metrics_update` lines 721-745 give them). The runs are tiny (the cached tiny thinker, one step):
they check that the metrics are there, named as verl names them, and that a seeded run validates to the same numbers
twice; they never rely on the size of a score, which differs between machines."""
import json
from pathlib import Path
import pytest
from omni_gspo.config import build_config
from omni_gspo.loggers import dashboard_keys
from omni_gspo.rewards import prompt_stats, subset_sizes, val_metrics
from omni_gspo.trainer import train

# verl 8a694930 `process_validation_metrics(['openai/gsm8k'] * 8, ['a'] * 4 + ['b'] * 4,
#   {'reward': ACC, 'acc': ACC, 'pred': PRED})['openai/gsm8k']['acc']`, run on these scores
ACC = [1., 0., 0., 0., 1., 0., 1., 1.]
PRED = ['7', '3', '3', '3', '7', '5', '7', '7']
VERL_ACC = {'mean@4': 0.5, 'std@4': 0.4330127018922193, 'best@2/mean': 0.697, 'best@2/std': 0.36670540011604724,
            'worst@2/mean': 0.31899999999999995, 'worst@2/std': 0.3770563844380528, 'maj@2/mean': 0.5175000000000001,
            'maj@2/std': 0.43511608570308064, 'best@4/mean': 0.8420000000000001, 'best@4/std': 0.25920219369254893,
            'worst@4/mean': 0.166, 'worst@4/std': 0.2622700058558444, 'maj@4/mean': 0.514,
            'maj@4/std': 0.37865911293509336}
VAL_CORE = ('mean@4', 'best@4/mean', 'best@4/std', 'maj@4/mean', 'maj@4/std')   # the core families at the largest n


def test_val_metrics_equal_verls_on_constructed_scores():
    details = [{'score': a, 'acc': a, 'pred': p} for a, p in zip(ACC, PRED)]
    m = val_metrics(['openai/gsm8k'] * 8, ['a'] * 4 + ['b'] * 4, details)
    ours = {k.split('/acc/')[1]: v for k, v in m.items() if '/acc/' in k}
    assert ours.keys() == VERL_ACC.keys()
    assert all(abs(ours[k] - VERL_ACC[k]) < 1e-12 for k in ours), (ours, VERL_ACC)
    core = sorted(k.removeprefix('val-core/openai/gsm8k/acc/') for k in m if k.startswith('val-core/'))
    assert core == sorted(VAL_CORE)
    # the score is the `reward` variable: auxiliary, its numbers the same here
    assert m['val-aux/openai/gsm8k/reward/best@4/mean'] == m['val-core/openai/gsm8k/acc/best@4/mean']


def test_mean_best_maj_by_hand():
    assert subset_sizes(1) == [] and subset_sizes(3) == [2, 3] and subset_sizes(16) == [2, 4, 8, 16]
    assert prompt_stats([1.0]) == {'mean@1': 1.0}                       # one response: its value, nothing else
    same = prompt_stats([0.5, 0.5, 0.5], ['x', 'y', 'z'])
    assert all(v == (0.0 if '/std' in k or k.startswith('std') else 0.5) for k, v in same.items()), same
    # one right answer in four: best of n draws is 1 with probability 1 - (3/4)^n (bootstrap: within a few %)
    one = prompt_stats([1., 0., 0., 0.])
    assert abs(one['best@2/mean'] - (1 - 9 / 16)) < 0.04 and abs(one['best@4/mean'] - (1 - 81 / 256)) < 0.04, one
    # the majority's value: the wrong answer '3' holds three of four, so maj@4 is mostly 0
    maj = prompt_stats([1., 0., 0., 0.], ['7', '3', '3', '3'])['maj@4/mean']
    assert abs(maj - 40 / 256) < 0.04, maj           # '7' wins with 3-4 of 4 draws (13/256) or 2 coming first (27/256)
    # several data sources, each with its own core variable; a failed reward counts 0 in `acc`
    m = val_metrics(['openai/gsm8k', 'openai/gsm8k', 'mmk12', 'mmk12'], [0, 0, 1, 1],
                    [{'score': 1.0, 'acc': 1.0}, {'score': 0.0, 'error': 'timed out'},
                     {'score': 1.0, 'accuracy': 1.0, 'format_reward': 0.3}, {'score': 0.0, 'accuracy': 0.0,
                                                                             'format_reward': 0.0}])
    assert m['val-core/openai/gsm8k/acc/mean@2'] == 0.5 and m['val-core/mmk12/reward/mean@2'] == 0.5
    assert m['val-aux/mmk12/format_reward/mean@2'] == 0.15 and 'val-core/mmk12/accuracy/mean@2' not in m


SMALL = {'data.train_batch_size': 4, 'actor.ppo_mini_batch_size': 2, 'rollout.n': 2, 'rollout.response_length': 24,
         'data.generated_val_size': 4, 'data.val_batch_size': 4, 'trainer.max_steps': 1, 'trainer.test_freq': 1,
         'logging.progress_bar': False, 'logging.plot': False, 'logging.rollout_groups': 0}
SAMPLED = {'rollout.val.n': 2, 'rollout.val.temperature': 1.0, 'rollout.val.top_p': 0.7,
           'trainer.val_before_train': True}


def rows(run:Path)->list[dict]:
    return [json.loads(l) for l in (run/'metrics.jsonl').read_text().splitlines()]


def val(row:dict)->dict:
    return {k: v for k, v in row.items() if k.startswith('val-')}


@pytest.fixture(scope='module')
def hf_runs(tmp_path_factory):
    "Three one-step runs of the built-in engine: sampled validation before and after the step (twice), and none."
    tmp = tmp_path_factory.mktemp('val')
    out = {}
    for name, ov in (('a', SAMPLED), ('b', SAMPLED), ('plain', {'trainer.test_freq': 0})):
        train(build_config('gsm8k', SMALL | ov, **{'trainer.output_dir': str(tmp/name)}), log=lambda s: None)
        out[name] = rows(tmp/name)
    return out


def test_validation_before_training_and_sampled_n2(hf_runs):
    a = hf_runs['a']
    assert [r['training/global_step'] for r in a] == [0, 1]
    assert set(a[0]) == {'training/global_step', *val(a[0])}       # step 0: the starting weights' validation alone
    for r in a:
        core = {k for k in r if k.startswith('val-core/')}
        assert core == {f'val-core/openai/gsm8k/acc/{k}' for k in ('mean@2', 'best@2/mean', 'best@2/std')}, core
        assert 0 <= r['val-core/openai/gsm8k/acc/mean@2'] <= r['val-core/openai/gsm8k/acc/best@2/mean'] <= 1
    assert 'val-core/openai/gsm8k/acc/mean@2' in dashboard_keys(a)      # shown beside the training curves


def test_seeded_validation_repeats_and_leaves_training_alone(hf_runs):
    a, b, plain = hf_runs['a'], hf_runs['b'], hf_runs['plain']
    assert [val(r) for r in a] == [val(r) for r in b]               # same seed: the same numbers, before and after
    # validating before step 1 draws nothing from the training's random streams: step 1 trains as without it
    for k in ('reward/mean', 'actor/pg_loss', 'response_length/mean'):
        assert a[1][k] == plain[0][k], (k, a[1][k], plain[0][k])


def test_vllm_engine_validates_sampled_before_training(tmp_path):
    pytest.importorskip('vllm')
    train(build_config('gsm8k', SMALL | SAMPLED | {'rollout.engine': 'vllm', 'rollout.vllm.max_num_seqs': 16},
                       **{'trainer.output_dir': str(tmp_path/'run')}), log=lambda s: None)
    got = rows(tmp_path/'run')
    assert [x['training/global_step'] for x in got] == [0, 1]
    for x in got: assert {'val-core/openai/gsm8k/acc/mean@2', 'val-core/openai/gsm8k/acc/best@2/mean'} <= set(x), x
