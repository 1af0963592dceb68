"""Exact resume (issue 11): a run killed with SIGKILL mid-training and resumed with `trainer.resume=auto` logs the same
metrics at every step as a run that was never interrupted (timings and memory aside). The resume command names only
the run folder (issue 27): the run's saved config is what continues, not the command line's defaults.

Also one-step-off with a separate rollout group (issue 29: `rollout.placement=separate`, `trainer.max_staleness=1`,
1 actor rank and 1 rollout rank through a local Ray cluster): killed with step 3 in flight, sampled with step 1's
weights; the checkpoint of step 2 keeps those weights, and the resumed step 3 is sampled again with them, so even its
staleness, TIS weights and rollout-actor mismatch equal the uninterrupted run's."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest

CLI = str(Path(sys.executable).with_name('omni-gspo'))
ARGS = ['train', 'trainer.max_steps=3', 'trainer.save_freq=1', 'trainer.test_freq=0', 'data.train_batch_size=4',
        'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'rollout.response_length=24', 'logging.progress_bar=false',
        'logging.plot=false']
VOLATILE = ('timing_s/', 'perf/')


def metrics(run):
    rows = [json.loads(l) for l in (run/'metrics.jsonl').read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


SEPARATE = ['rollout.placement=separate', 'hardware.gpus_per_node=2', 'rollout.devices=1', 'trainer.max_staleness=1']


@pytest.mark.parametrize('placement', [[], SEPARATE], ids=['colocated', 'separate_one_step_off'])
def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path, placement):
    if placement: pytest.importorskip('ray')
    args = [*ARGS, *placement]
    env = os.environ | {'RAY_ADDRESS': 'local'}   # each run its own Ray cluster, never another one found on the machine
    r = subprocess.run([CLI, *args, 'trainer.output_dir=whole'], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path/'killed'
    p = subprocess.Popen([CLI, *args, 'trainer.output_dir=killed'], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not (run/'checkpoints'/'step_2'/'state.json').exists():      # killed once step 2 is saved, while step 3 runs
        assert p.poll() is None and time.time() < deadline, 'the run ended before it could be killed'
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL); p.wait()
    done = sorted(int(d.name.split('_')[1]) for d in (run/'checkpoints').glob('step_*') if (d/'state.json').exists())
    assert done and done[-1] < 3, done
    saved = json.loads((run/'config.json').read_text())
    r = subprocess.run([CLI, 'train', 'trainer.output_dir=killed', 'trainer.resume=auto'], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f'resumed from' in r.stdout and f'at step {done[-1] + 1}' in r.stdout, r.stdout[-2000:]
    assert "resuming with the run's saved config, unchanged" in r.stdout, r.stdout[-2000:]
    saved['trainer']['resume'] = 'auto'
    assert json.loads((run/'config.json').read_text()) == saved
    history = [json.loads(l) for l in (run/'config_history.jsonl').read_text().splitlines()]
    assert [(h['step'], h['changes']) for h in history] == [(1, {}), (done[-1] + 1, {})]
    whole, resumed = metrics(tmp_path/'whole'), metrics(run)
    assert [x['training/global_step'] for x in resumed] == [1, 2, 3]
    assert resumed == whole
    if placement: assert [x['rollout/staleness_max'] for x in resumed] == [0, 1, 1]
