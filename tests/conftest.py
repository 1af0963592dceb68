"Fixtures shared by the test files."
import subprocess, sys
from pathlib import Path
import pytest

SCRIPT = str(Path(sys.executable).with_name('omni-gspo'))
# A 2-step vLLM run of the gsm8k recipe away from the defaults (sampling temperature 0.7, LoRA dropout, masked IS) with
# a validation after step 2: test_numerics checks its parity, test_entrypoints its engine's metrics (one run, ~25 s).
VLLM_AWAY_FROM_DEFAULTS = (
    'train', 'recipe=gsm8k', 'rollout.engine=vllm', 'rollout.temperature=0.7', 'model.lora_dropout=0.05',
    'algorithm.rollout_is=mis', 'trainer.max_steps=2', 'trainer.test_freq=2', 'data.train_batch_size=4',
    'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'logging.progress_bar=false', 'rollout.vllm.max_num_seqs=16',
    'data.generated_val_size=8', 'trainer.output_dir=run')


@pytest.fixture(scope='session')
def ray_cluster():
    "One local Ray cluster of 3 CPUs for every test that places workers through Ray (started once: each start costs ~10 s)."
    ray = pytest.importorskip('ray')
    ray.init(address='local', num_cpus=3, include_dashboard=False, configure_logging=False)   # never a cluster found on the machine
    yield ray
    ray.shutdown()


@pytest.fixture(scope='session')
def cli_run(tmp_path_factory):
    """`cli_run(*args)`: `(folder, CompletedProcess)` of the installed `omni-gspo ARGS` run in a fresh folder, once a
    session for each `args`: tests that assert different things about one run share it."""
    done = {}
    def run(*args:str):
        if args not in done:
            cwd = tmp_path_factory.mktemp('cli_run')
            done[args] = cwd, subprocess.run([SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=900)
        return done[args]
    return run
