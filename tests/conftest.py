"Fixtures shared by the test files."
import subprocess, sys
from pathlib import Path
import pytest

SCRIPT = str(Path(sys.executable).with_name('omni-gspo'))
# A 2-step vLLM run of the gsm8k recipe away from the defaults (sampling temperature 0.7, LoRA dropout, masked IS) with
# a validation after step 2: test_numerics checks its parity, test_entrypoints its engine's metrics (one run, ~25 s).
# `MOVES` (a config dict) / `ENTROPY_TERM` (the same on a command line): step 1's update moves the weights whatever the
# tiny model's rewards (a step whose groups all tie has no update alone), so step 2's parity shows that the sync landed.
MOVES = {'algorithm.entropy_coeff': 0.01}
ENTROPY_TERM = f"algorithm.entropy_coeff={MOVES['algorithm.entropy_coeff']}"
VLLM_AWAY_FROM_DEFAULTS = (
    'train', 'recipe=gsm8k', 'rollout.engine=vllm', 'rollout.temperature=0.7', 'model.lora_dropout=0.05', ENTROPY_TERM,
    'algorithm.rollout_is=mis', 'trainer.max_steps=2', 'trainer.test_freq=2', 'data.train_batch_size=4',
    'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'logging.progress_bar=false', 'rollout.vllm.max_num_seqs=16',
    'data.generated_val_size=8', 'trainer.output_dir=run')


# tools/test.sh runs the files on two pytest-xdist workers (`-n 2 --no-loadscope-reorder`): one after the other the
# 2 cores are 70 % busy (process start-ups, imports, Ray and vLLM waits run one thread). Measured on a 2-core machine,
# 2026-12-04: serially 691 s, on two workers 560 s, on two workers with OMP_WAIT_POLICY=PASSIVE (tools/test.sh) 461 s.
# Each file is one unit of work, so its module fixtures start once; test_numerics joins test_entrypoints, with which it
# shares a `cli_run`. Units go out longest first (serial seconds: entrypoints with numerics ~200, resume ~155, placement
# ~130, tensor_parallel ~95, ray ~90, every other file under 30), so that neither worker is left finishing alone.
SHARES_RUNS_WITH = {'test_numerics': 'test_entrypoints'}
LONGEST_FIRST = ('test_entrypoints', 'test_resume', 'test_placement', 'test_tensor_parallel', 'test_ray')


def unit_of(nodeid:str)->str:
    "The unit of work of test `nodeid`: its file's stem, or the file whose runs it shares."
    stem = Path(nodeid.split('::')[0]).stem
    return SHARES_RUNS_WITH.get(stem, stem)


def pytest_collection_modifyitems(items):
    order = {u: i for i, u in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: order.get(unit_of(it.nodeid), len(order)))   # stable: a file's tests keep their order


def pytest_xdist_make_scheduler(config, log):
    "xdist's scope scheduling with `unit_of` as the scope (its `--dist loadgroup` marks miss pytest 9's test ids)."
    from xdist.scheduler import LoadScopeScheduling
    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid): return unit_of(nodeid)
    return ByUnit(config, log)


@pytest.fixture(scope='session')
def ray_cluster():
    "One local Ray cluster of 3 CPUs for the tests that place workers through Ray (started once: a start costs ~10 s)."
    ray = pytest.importorskip('ray')
    # address='local': never a cluster found on the machine
    ray.init(address='local', num_cpus=3, include_dashboard=False, configure_logging=False)
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
