"""A run's results do not depend on whether the build cache existed (issue 27): the first run on a new machine builds
the tiny model into the cache, the second finds it; both log the same metrics at every step (timings and memory
aside)."""
import json, os, subprocess, sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name('omni-gspo'))
ARGS = ['train', 'trainer.max_steps=3', 'trainer.save_freq=1', 'trainer.test_freq=0', 'data.train_batch_size=4',
        'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'rollout.response_length=24', 'logging.progress_bar=false',
        # a warm start of its own: a cache entry no other test has built
        'logging.plot=false', 'model.warm_start_steps=20']
VOLATILE = ('timing_s/', 'perf/')


def metrics(run):
    rows = [json.loads(l) for l in (run/'metrics.jsonl').read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def test_first_run_that_builds_the_cache_matches_the_next(tmp_path):
    env = {**os.environ, 'OMNI_GSPO_CACHE': str(tmp_path/'cache')}
    for name in ('builds', 'finds'):
        r = subprocess.run([CLI, *ARGS, f'trainer.output_dir={name}'], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path/'cache'/'tiny-thinker-small-ws20-v2').is_dir()
    builds, finds = metrics(tmp_path/'builds'), metrics(tmp_path/'finds')
    assert [x['training/global_step'] for x in builds] == [1, 2, 3]
    assert builds == finds
