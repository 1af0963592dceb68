"""The memory planner through the console script's `main` (tests/console.py ties it to the installed script):
`omni-gspo plan` prints the plan, and `omni-gspo train` refuses a config that cannot fit before it loads anything
(08b_plan, 10_launch)."""
import sys
import pytest
from pathlib import Path
from console import run_main as run_cli   # the script's `main` in this process: tests/console.py says why

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT/'bench'/'memory_plan'))


def real_thinker(tmp_path)->Path:
    "A folder holding only the config.json of the real-size Qwen3-Omni-30B-A3B thinker (the planner needs no weights)."
    from thinker import thinker_config
    d = tmp_path/'thinker'; thinker_config().save_pretrained(d)
    return d


def test_cli_plan_prints_a_figure(tmp_path):
    r = run_cli('plan', f'model.path={real_thinker(tmp_path)}', 'hardware.device=gpu',
                'hardware.device_memory_gb=140.4', 'model.dtype=bfloat16', 'model.lora_rank=32', 'model.lora_alpha=64',
                'actor.fsdp=true', 'actor.activation_checkpointing=true', 'rollout.engine=vllm',
                'rollout.vllm.gpu_memory_utilization=0.55',
                'data.max_prompt_length=1536', 'rollout.response_length=512', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'vLLM weights' in r.stdout and 'fits,' in r.stdout, r.stdout
    weights = next(l for l in r.stdout.splitlines() if l.strip().startswith('actor weights'))
    assert 50 < float(weights.split()[-1]) < 60, weights       # the thinker's 59 GiB of bf16, less the towers


def test_cli_train_refuses_what_cannot_fit(tmp_path):
    r = run_cli('train', f'model.path={real_thinker(tmp_path)}', 'hardware.device_memory_gb=1',
                'model.dtype=bfloat16', 'trainer.output_dir=run', cwd=tmp_path)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert 'the memory plan does not fit' in r.stderr and 'no single change' in r.stderr, r.stderr
    assert not (tmp_path/'run').exists()                         # refused before the run folder, workers or weights


UPSTREAM_DEVICE_GB = {'gpu': 80, 'npu': 64}   # the scripts' H800 80 GB and Ascend 910C 64 GB


def preset_names()->list[tuple[str, str]]:
    "Every preset (OPD's with its teacher group on devices of its own, as the upstream script's teacher)."
    from omni_gspo.presets import PRESETS
    return list(PRESETS)


@pytest.mark.parametrize('preset,recipe', preset_names())
def test_every_preset_fits_its_upstream_devices(tmp_path, preset, recipe):
    "`omni-gspo plan` on each preset, only model.path given, at its script's device count and memory: it fits."
    from omni_gspo.presets import preset_config
    ckpt = str(real_thinker(tmp_path))
    device = preset_config(recipe, preset, {'model.path': ckpt}).hardware.device
    r = run_cli('plan', f'recipe={recipe}', f'preset={preset}', f'model.path={ckpt}',
                f'hardware.device_memory_gb={UPSTREAM_DEVICE_GB[device]}', cwd=tmp_path)
    assert r.returncode == 0 and 'fits,' in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_upstream_fits_by_its_offloads(tmp_path):
    "gsm8k on 4 × 80 GB: upstream's param_offload / optimizer_offload are what make it fit (issue 41: 0.20 GiB over)."
    args = ('plan', 'recipe=gsm8k', 'preset=gpu-lora', f'model.path={real_thinker(tmp_path)}',
            'hardware.device_memory_gb=80')
    kept = run_cli(*args, 'actor.param_offload=false', 'actor.optimizer_offload=false', cwd=tmp_path)
    assert kept.returncode == 3 and 'does not fit, 0.20 GiB over' in kept.stdout, kept.stdout
    assert 'actor.param_offload=true actor.optimizer_offload=true' in kept.stdout, kept.stdout
    r = run_cli(*args, cwd=tmp_path)
    gen = {l.split()[0]: l.split()[-1] for l in r.stdout.splitlines()[2:] if l.startswith('  actor weights')}
    assert r.returncode == 0 and gen == {'actor': '-'}, r.stdout   # the actor's weights off the device while vLLM runs


def test_opd_preset_teacher_fits_apart_and_is_refused_colocated(tmp_path):
    "gpu-opd-lora on 2 x 8 x 80 GB: the teacher group's rank fits; the same teacher on every actor rank does not."
    args = ('plan', 'recipe=mmk12', 'preset=gpu-opd-lora', f'model.path={real_thinker(tmp_path)}',
            'hardware.device_memory_gb=80')
    r = run_cli(*args, cwd=tmp_path)
    head = r.stdout.splitlines()[1].split()
    assert r.returncode == 0 and 'fits,' in r.stdout and head[-1] == 'teacher', r.stdout
    weights = next(l for l in r.stdout.splitlines() if l.strip().startswith('teacher weights')).split()
    assert weights[-3:-1] == ['-', '-'] and 55 < float(weights[-1]) < 65, weights   # on the teacher's device alone
    colocated = run_cli(*args, 'hardware.nnodes=1', 'algorithm.opd_teacher_devices=0', cwd=tmp_path)
    assert colocated.returncode == 3 and 'does not fit' in colocated.stdout, colocated.stdout
    assert 'hardware.nnodes=2 algorithm.opd_teacher_devices=8' in colocated.stdout, colocated.stdout
    from omni_gspo.config import ConfigError
    from omni_gspo.launch import cli_config
    from omni_gspo.plan import check_memory   # what `train` runs before it loads anything (no GPU here to reach it)
    check_memory(cli_config(list(args[1:])))
    with pytest.raises(ConfigError, match='the memory plan does not fit'):
        check_memory(cli_config([*args[1:], 'hardware.nnodes=1', 'algorithm.opd_teacher_devices=0']))


def test_vllm_teacher_is_planned_as_vllm_holds_it(tmp_path):
    ("gpu-opd-lora with `algorithm.opd_teacher_engine=vllm`: a teacher rank holds vLLM's share of its device (the "
     "whole teacher at tensor-parallel size 1, runtime, KV cache), not the built-in forward's weights and scoring; a "
     "share whose KV cache cannot hold a row beside the whole teacher does not fit; the larger share is the change.")
    args = ('plan', 'recipe=mmk12', 'preset=gpu-opd-lora', f'model.path={real_thinker(tmp_path)}',
            'hardware.device_memory_gb=80')
    part = lambda out, name: next(l for l in out.splitlines() if l.strip().startswith(name)).split()
    r = run_cli(*args, 'algorithm.opd_teacher_engine=vllm', cwd=tmp_path)
    assert r.returncode == 0 and 'fits,' in r.stdout and "teacher's vLLM KV cache" in r.stdout, r.stdout
    assert not any(l.strip().startswith(('teacher weights', 'teacher scoring')) for l in r.stdout.splitlines())
    rollout, teacher = map(float, part(r.stdout, 'vLLM weights')[-2:])
    assert abs(teacher - 2 * rollout) < 0.01, (rollout, teacher)   # the whole teacher; the rollout's half at TP 2
    share = sum(float(part(r.stdout, k)[-1]) for k in ('vLLM weights', 'vLLM activations', 'KV cache'))
    assert abs(share - 0.8 * 80) < 0.02, share                      # the rollout's memory share of the device
    low = ('rollout.vllm.gpu_memory_utilization=0.75',)
    assert run_cli(*args, *low, cwd=tmp_path).returncode == 0      # the built-in teacher: the share is not its own
    v = run_cli(*args, *low, 'algorithm.opd_teacher_engine=vllm', cwd=tmp_path)
    assert v.returncode == 3 and "the teacher's vLLM KV cache holds 0 tokens" in v.stdout, v.stdout
    assert 'rollout.vllm.gpu_memory_utilization=0.8   (peak' in v.stdout, v.stdout
