"""Trainer runs away from the defaults (issue 7): sampling temperature 0.7 and LoRA dropout, with both engines.

The actor scores at the rollout temperature and in eval mode, so in fp32 the rollout's log-probs and the actor's
recomputation agree (probability correlation >= 0.9999) and masked importance sampling keeps every sequence. Dropout
acts on the LoRA branch only, which is zero until an update moves `lora_B`: both runs add an entropy term
(`ENTROPY_TERM`), so step 1 updates whatever the tiny model's rewards and step 2 samples with the branch live."""
import json
import pytest

from conftest import ENTROPY_TERM, VLLM_AWAY_FROM_DEFAULTS   # vllm: the run test_entrypoints checks too
HF_RUN = ('train', 'rollout.engine=hf', 'rollout.temperature=0.7', 'model.lora_dropout=0.05', ENTROPY_TERM,
          'algorithm.rollout_is=mis', 'trainer.max_steps=2', 'trainer.test_freq=0', 'data.train_batch_size=4',
          'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'logging.progress_bar=false', 'trainer.output_dir=run')


@pytest.mark.parametrize('engine', ['hf', 'vllm'])
def test_temperature_and_dropout_keep_parity(cli_run, engine):
    cwd, r = cli_run(*(HF_RUN if engine == 'hf' else VLLM_AWAY_FROM_DEFAULTS))
    assert {f'rollout.engine={engine}', 'rollout.temperature=0.7', 'model.lora_dropout=0.05'} <= set(r.args), r.args
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(l) for l in (cwd/'run'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1, 2]
    for x in rows:
        assert x['training/rollout_actor_probs_pearson_corr'] >= 0.9999, x
        assert abs(x['rollout_corr/log_ppl_diff']) < 1e-3, x
    assert rows[0]['rollout_corr/seq_masked_fraction'] == 0.0, rows[0]
