"""A teacher group of its own (issue 41, `algorithm.opd_teacher_devices`): 2 actor ranks (FSDP2 over gloo, the built-in
engine colocated with each) and 1 teacher rank, through a local Ray cluster, against the teacher loaded on each actor
rank.

The student is the teacher's checkpoint with 25 % relative weight noise (`noised_copy`'s default), so the
distillation term is non-zero from the first step; sampling runs at temperature 0.7, so a scorer that ignored the
temperature rule would show. Checked: the teacher rank's log-probs of each actor rank's samples, handed back in actor
order, equal a colocated teacher's of the same samples (probability correlation >= 0.9999, max |Δp| < 1e-5: both are
the same fp32 forward, in another process); and a 3-step run with the teacher group logs the same metrics as the run
with the teacher beside each actor (1e-4 relative or 1e-5 absolute, as tests/test_placement.py: the same rows, seeds
and computation in both), the distillation metrics among them. Timings, memory and throughput are left out: they
measure the machine."""
import math
import torch
from omni_gspo.actor import Actor
from omni_gspo.config import build_config
from omni_gspo.lora import apply_lora
from omni_gspo.model import adapter_for, load_model, noised_copy, resolve_model_path
from omni_gspo.rollout import rollout_parity
from omni_gspo.step import PEARSON
from omni_gspo.trainer import train
from omni_gspo.viz import read_metrics
from omni_gspo.workers import load_teacher

MACHINE = ('timing_s/', 'perf/')


def opd(**over)->dict:
    "A small OPD run of the gsm8k recipe: the tiny thinker teaches its noised copy."
    teacher = str(resolve_model_path('', 300))
    return {'model.path': str(noised_copy(teacher)), 'algorithm.opd_teacher': teacher, 'rollout.temperature': 0.7,
            'data.train_batch_size': 4, 'actor.ppo_mini_batch_size': 2, 'rollout.n': 4, 'rollout.response_length': 40,
            'data.generated_train_size': 32, 'trainer.test_freq': 0, 'logging.progress_bar': False,
            'logging.print_samples': 0, 'actor.fsdp': True, 'trainer.max_steps': 3} | over

GROUP = {'hardware.gpus_per_node': 3, 'algorithm.opd_teacher_devices': 1}


def test_teacher_rank_scores_each_share_as_a_colocated_teacher(ray_cluster, tmp_path):
    import ray
    from omni_gspo.placement import make_workers, teacher_scores
    cfg = build_config('gsm8k', opd(**GROUP), **{'trainer.output_dir': str(tmp_path)})
    g = make_workers(cfg)
    try:
        assert (g.world, g.teachers.world) == (2, 1)   # the actor ranks (the trainer's world), the teacher ranks
        g.call('start', 3)
        shares = [[0, 1], [2, 3]]
        ros = [w.sample.remote(1, s) for w, s in zip(g.workers, shares)]
        got = ray.get(teacher_scores(g.teachers, ros, shares))
        ros = ray.get(ros)
    finally: g.close()
    path = resolve_model_path(cfg.model.path, cfg.model.warm_start_steps)
    ad, cpu = adapter_for(path), torch.device('cpu')
    policy = apply_lora(load_model(path, cfg.model.dtype, cpu, adapter=ad), cfg.model)
    teacher = load_teacher(cfg.algorithm.opd_teacher, cfg.model, cpu, print)
    colocated = Actor(policy, cfg.actor, cfg.algorithm, ad, teacher, temperature=0.7)   # as an actor rank holds it
    assert not torch.equal(ros[0].response_ids, ros[1].response_ids)   # two shares: an exchange would show
    for ro, lp in zip(ros, got):
        assert lp.shape == ro.response_ids.shape
        mine = colocated.teacher_logprobs(ro)
        p = rollout_parity(lp, mine, ro.response_mask)
        assert p[PEARSON] >= 0.9999 and p['training/rollout_probs_diff_max'] < 1e-5, p
        assert not torch.equal(lp, colocated.logprobs(ro))   # the teacher, not the noised student


def run(over, path):
    cfg = build_config('gsm8k', over, **{'trainer.output_dir': str(path)})
    return read_metrics(train(cfg, log=lambda s: None).metrics)


def test_teacher_group_run_equals_colocated_teacher(ray_cluster, tmp_path):
    colocated = run(opd(**{'hardware.gpus_per_node': 2}), tmp_path/'colocated')
    group = run(opd(**GROUP), tmp_path/'group')
    assert [r['training/global_step'] for r in group] == [1, 2, 3]
    for c, s in zip(colocated, group):
        assert c['distillation/abs_loss'] > 0 and s['timing_s/wait_teacher'] >= 0 and 'timing_s/wait_teacher' not in c
        keys = {k for k in c if not k.startswith(MACHINE)}
        assert keys <= set(s), keys - set(s)
        assert {'distillation/loss', 'distillation/abs_loss', 'distillation/pg_loss'} <= keys
        for k in keys:
            assert math.isclose(c[k], s[k], rel_tol=1e-4, abs_tol=1e-5), (c['training/global_step'], k, c[k], s[k])
