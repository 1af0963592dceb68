"""What the README's "Running on GPUs" says, checked on CPU (issue 40, "What a user coming from verl-omni meets first"):
which card the one-GPU command is for, that it does not fit one 80 GB card, and the CPU command for a separate
rollout rank with one-step-off. The one-GPU command is planned as `omni-gspo plan` plans it (tests/console.py), with
the config.json of the real-size Qwen3-Omni-30B-A3B thinker in place of the checkpoint (the planner needs no
weights); the H200's memory is 140.4 GiB (143,771 MiB, as nvidia-smi reports it)."""
import re, shlex
from pathlib import Path
from console import run_main as run_cli   # the script's `main` in this process: tests/console.py says why
from test_plan import real_thinker

ROOT = Path(__file__).resolve().parent.parent
H200_GIB = 140.4


def gpu_section()->str:
    "The README's 'Running on GPUs' section."
    text = (ROOT/'README.md').read_text()
    return text.split('\n## Running on GPUs\n', 1)[1].split('\n## ', 1)[0]


def command(comment:str)->list[str]:
    "The arguments after `omni-gspo train` of the section's command whose comment starts with `comment`."
    block = re.search(r"```bash\n(.*?)```", gpu_section(), flags=re.S).group(1).replace('\\\n', ' ')
    line = next((l for l in block.splitlines() if 'omni-gspo train' in l and f'# {comment}' in l), None)
    assert line, f"no 'omni-gspo train … # {comment}' in README's Running on GPUs block:\n{block}"
    return shlex.split(line.split('omni-gspo train', 1)[1], comments=True)


def test_one_gpu_command_names_its_card_and_does_not_fit_80gb(tmp_path):
    args = [a if not a.startswith('model.path=') else f'model.path={real_thinker(tmp_path)}'
            for a in command('one GPU')]
    text = ' '.join(gpu_section().split())
    assert 'one-GPU command is for one 141 GB H200' in text and 'does not fit one 80 GB card' in text, text[:2000]
    r = run_cli('plan', *args, 'hardware.device_memory_gb=80', cwd=tmp_path)
    assert r.returncode == 3 and 'does not fit' in r.stdout and 'no single change' in r.stdout, r.stdout[-2000:]
    r = run_cli('plan', *args, f'hardware.device_memory_gb={H200_GIB}', cwd=tmp_path)
    assert r.returncode == 0 and 'fits,' in r.stdout, r.stdout[-2000:]


def test_cpu_command_is_a_separate_rollout_rank_one_step_off(tmp_path):
    "The command the README gives for CPU: a separate rollout rank, one-step-off; `config` takes it as that."
    args = command('CPU')
    r = run_cli('config', *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = dict(l.split(' = ', 1) for l in r.stdout.splitlines() if ' = ' in l)
    assert {k: got[k] for k in ('hardware.device', 'rollout.placement', 'rollout.devices', 'trainer.max_staleness',
                                'hardware.gpus_per_node')} == {
        'hardware.device': "'cpu'", 'rollout.placement': "'separate'", 'rollout.devices': '1',
        'trainer.max_staleness': '1', 'hardware.gpus_per_node': '3'}, got
