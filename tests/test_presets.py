"""Each preset against the upstream launch script it reproduces, through `omni-gspo config` (its `main`, run in this
process: tests/console.py says why), `preset_config` and the recipe notebooks' `notebook_config`; unknown presets and
verl's own keys.

The values are read from verl-project/verl-omni, examples/gspo_trainer/qwen3_omni/ (main @ a1139baf; AVQA GPU @
72d104b5; the OPD script from PR #375), written here as the script writes them: (verl key, value, our key)."""
import ast, json, subprocess, sys, types
from contextlib import contextmanager
from pathlib import Path
import pytest
from omni_gspo.config import get_key, verl_equivalent
from omni_gspo.launch import notebook_config
from omni_gspo.presets import PRESETS, preset_config

ROOT = Path(__file__).resolve().parent.parent
from console import run_main as cli
sys.path.insert(0, str(ROOT/'bench'/'memory_plan'))


@pytest.fixture(scope='module')
def thinker(tmp_path_factory)->str:
    "A folder holding the config.json of the real-size thinker: a preset's lengths need its 65,536 positions."
    from thinker import thinker_config
    d = tmp_path_factory.mktemp('ckpt')/'Qwen3-Omni-30B-A3B-Instruct'; thinker_config().save_pretrained(d)
    return str(d)
A = 'actor_rollout_ref.'
QKVO = ['q_proj', 'k_proj', 'v_proj', 'o_proj']
DERIVED = {('actor.fsdp', 'fsdp2'): True, ('rollout.engine', 'vllm_omni'): 'vllm',   # upstream -> ours where different
           # verl @ 8a694930 declares freeze_vision_tower (verl/workers/config/actor.py:161) and reads it nowhere: the
           # towers train in full-parameter runs (LoRA freezes them anyway); ours is off, which trains them too
           ('model.freeze_vision_tower', True): False,
           ('algorithm.opd_coef', 'kl'): 1.0}   # k1 with a policy gradient at verl's distillation_loss_coef of 1

def script(*triples): return {ours: (verl, v) for verl, v, ours in triples}

GSM8K_GPU = script(   # run_qwen3_omni_thinker_gspo_lora_v1.sh
    ('data.train_batch_size', 128, 'data.train_batch_size'),
    ('data.max_prompt_length', 2048, 'data.max_prompt_length'),
    ('data.max_response_length', 8192, 'rollout.response_length'),
    (A + 'model.lora_rank', 32, 'model.lora_rank'),
    (A + 'model.lora_alpha', 64, 'model.lora_alpha'),
    (A + 'model.target_modules', QKVO, 'model.target_modules'),
    (A + 'model.enable_gradient_checkpointing', True, 'actor.activation_checkpointing'),
    (A + 'actor.freeze_vision_tower', True, 'model.freeze_vision_tower'),
    (A + 'actor.strategy', 'fsdp2', 'actor.fsdp'),
    (A + 'actor.fsdp_config.param_offload', True, 'actor.param_offload'),
    (A + 'actor.fsdp_config.optimizer_offload', True, 'actor.optimizer_offload'),
    (A + 'actor.fsdp_config.offload_policy', False, 'actor.fsdp_cpu_offload'),   # not set: verl's default
    (A + 'actor.optim.lr', 3e-6, 'actor.optim.lr'),
    (A + 'actor.optim.weight_decay', 0.01, 'actor.optim.weight_decay'),
    (A + 'actor.optim.clip_grad', 1.0, 'actor.optim.grad_clip'),
    (A + 'actor.ppo_mini_batch_size', 16, 'actor.ppo_mini_batch_size'),
    (A + 'rollout.log_prob_max_token_len_per_gpu', 20480, 'actor.ppo_max_token_len_per_gpu'),
    (A + 'actor.policy_loss.loss_mode', 'gspo', 'algorithm.policy_loss'),
    (A + 'actor.clip_ratio_low', 3e-4, 'algorithm.clip_ratio_low'),
    (A + 'actor.clip_ratio_high', 4e-4, 'algorithm.clip_ratio_high'),
    (A + 'actor.loss_agg_mode', 'seq-mean-token-mean', 'algorithm.loss_agg_mode'),
    (A + 'actor.fsdp_config.model_dtype', 'bfloat16', 'model.dtype'),
    (A + 'rollout.n', 16, 'rollout.n'),
    (A + 'rollout.name', 'vllm_omni', 'rollout.engine'),   # omni_trainer.yaml's default
    (A + 'rollout.tensor_model_parallel_size', 2, 'rollout.tensor_parallel_size'),
    (A + 'rollout.gpu_memory_utilization', 0.8, 'rollout.vllm.gpu_memory_utilization'),
    (A + 'rollout.max_num_seqs', 1024, 'rollout.vllm.max_num_seqs'),   # not set: verl's default
    (A + 'actor.fsdp_config.use_torch_compile', True, 'actor.compile'),   # not set: verl's default
    (A + 'rollout.cudagraph_capture_sizes', [], 'rollout.vllm.cudagraph_capture_sizes'),   # not set: vLLM's own list
    ('trainer.logger', ['console', 'wandb'], 'logging.loggers'),
    ('trainer.n_gpus_per_node', 4, 'hardware.gpus_per_node'),
    ('trainer.nnodes', 1, 'hardware.nnodes'),
    ('trainer.save_freq', 50, 'trainer.save_freq'),
    ('trainer.test_freq', 10, 'trainer.test_freq'),
    ('trainer.total_epochs', 10, 'trainer.total_epochs'),
    (None, 'gpu', 'hardware.device'),
    (None, 0, 'trainer.max_steps'))   # CUDA devices; the length is total_epochs
MMK12_GPU = GSM8K_GPU | script(   # run_qwen3_omni_thinker_gspo_lora_mmk12_v1.sh
    ('data.max_prompt_length', 4096, 'data.max_prompt_length'),
    ('data.max_response_length', 12288, 'rollout.response_length'),
    (A + 'actor.ppo_max_token_len_per_gpu', 30720, 'actor.ppo_max_token_len_per_gpu'))
AVQA_GPU = MMK12_GPU | script(   # run_qwen3_omni_thinker_gspo_lora_avqa_v1.sh
    (A + 'actor.ppo_max_token_len_per_gpu', 20480, 'actor.ppo_max_token_len_per_gpu'),
    (A + 'rollout.gpu_memory_utilization', 0.7, 'rollout.vllm.gpu_memory_utilization'),
    (A + 'rollout.engine_kwargs.vllm_omni.max_num_seqs', 256, 'rollout.vllm.max_num_seqs'),
    (A + 'rollout.cudagraph_capture_sizes', [1, 2, 4, 8, 16, 32, 64, 128, 256], 'rollout.vllm.cudagraph_capture_sizes'))
FULL = ('model.lora_alpha', 'model.target_modules')   # LoRA-only keys
AVQA_NPU = {k: v for k, v in AVQA_GPU.items() if k not in FULL} | script(   # run_qwen3_omni_thinker_gspo_npu_avqa_v1.sh
    (A + 'model.lora_rank', 0, 'model.lora_rank'),
    (A + 'actor.optim.lr', 1e-6, 'actor.optim.lr'),
    (A + 'actor.optim.weight_decay', 0.1, 'actor.optim.weight_decay'),
    (A + 'actor.entropy_from_logits_chunk_size', 2048, 'actor.logits_chunk_tokens'),
    (A + 'actor.fsdp_config.use_torch_compile', False, 'actor.compile'),
    (A + 'model.override_config.attn_implementation', 'sdpa', 'model.attn_implementation'),
    (A + 'rollout.gpu_memory_utilization', 0.6, 'rollout.vllm.gpu_memory_utilization'),
    (A + 'rollout.max_num_seqs', 128, 'rollout.vllm.max_num_seqs'),
    (A + 'rollout.cudagraph_capture_sizes', [], 'rollout.vllm.cudagraph_capture_sizes'),
    ('trainer.logger', ['console', 'tensorboard'], 'logging.loggers'),
    ('trainer.n_gpus_per_node', 16, 'hardware.gpus_per_node'),
    (None, 'npu', 'hardware.device'),
    (None, 42, 'trainer.seed'))   # ASCEND devices; data.seed=42
MMK12_OPD = MMK12_GPU | script(   # run_qwen3_omni_thinker_gspo_lora_mmk12_v1_opd.sh (PR #375 @ 5859522b)
    # the script lists Ascend's sparse sizes; on GPU the preset keeps the MMK12 GPU script's (none: vLLM's own list)
    (A + 'rollout.cudagraph_capture_sizes', [], 'rollout.vllm.cudagraph_capture_sizes'),
    ('trainer.logger', ['console', 'tensorboard'], 'logging.loggers'),
    # the GPU adaptation: the script's two Ascend machines, 16 devices for the student and 16 for the teacher (lines
    # 14-15, 35-36), as two GPU machines of 8 (PR #375's first version's pools, e1e1bf4b lines 24-25)
    ('trainer.n_gpus_per_node', 8, 'hardware.gpus_per_node'),
    (None, 2, 'hardware.nnodes'),   # the student's machine and the teacher's
    ('distillation.n_gpus_per_node', 8, 'algorithm.opd_teacher_devices'),
    ('distillation.distillation_loss.loss_mode', 'kl', 'algorithm.opd_coef'))
UPSTREAM = {('gpu-lora', 'gsm8k'): GSM8K_GPU, ('gpu-lora', 'mmk12'): MMK12_GPU, ('gpu-lora', 'avqa'): AVQA_GPU,
            ('npu-full', 'avqa'): AVQA_NPU, ('gpu-opd-lora', 'mmk12'): MMK12_OPD}


def ours(key, value): return DERIVED.get((key, value if not isinstance(value, list) else None), value)

def printed(out:str)->dict:
    "`omni-gspo config`'s `key = value` lines as a dict."
    return {k: ast.literal_eval(v) for k, _, v in (l.partition(' = ') for l in out.splitlines())}


def test_every_preset_has_its_script():
    assert set(UPSTREAM) == set(PRESETS)


@pytest.mark.parametrize('preset,recipe', list(UPSTREAM))
def test_preset_equals_its_upstream_script(preset, recipe, thinker):
    r = cli('config', f'recipe={recipe}', f'preset={preset}', f'model.path={thinker}')
    assert r.returncode == 0, r.stderr
    shown, built = printed(r.stdout), preset_config(recipe, preset, {'model.path': thinker})
    for key, (verl, value) in UPSTREAM[preset, recipe].items():
        assert shown[key] == get_key(built, key) == ours(key, value), (key, verl, value, shown[key])
        if verl and verl.removeprefix(A) != key: assert key in verl_equivalent(verl), (verl, key)
    assert shown['actor.fsdp'] and not shown['model.freeze_audio_tower']        # FSDP2; the towers train where all do


@contextmanager
def plugin(installed:bool):
    "A stand-in `vllm_ascend` (vLLM's Ascend platform plugin) in `sys.modules`, or a machine on which it is missing."
    sys.modules['vllm_ascend'] = types.ModuleType('vllm_ascend') if installed else None
    try: yield
    finally: sys.modules.pop('vllm_ascend')


@pytest.mark.parametrize('preset,recipe', list(UPSTREAM))
def test_train_takes_every_preset(preset, recipe, thinker, tmp_path):
    "What `train` checks before it loads anything passes for each preset given only model.path (the NPU one: with a "
    "stand-in vllm-ascend; a logger package this machine lacks aside)."
    from omni_gspo.config import ConfigError
    from omni_gspo.trainer import start_checks
    cfg = preset_config(recipe, preset, {'model.path': thinker, 'trainer.output_dir': str(tmp_path/'run')})
    with plugin(True):
        try: start_checks(cfg, tmp_path/'run', lambda s: None); problems = []
        except ConfigError as e: problems = e.problems
    assert [p for p in problems if not p.startswith('logging.loggers')] == []


def test_npu_full_trains_what_verl_trains(thinker):
    "verl's full-parameter run trains the vision and audio encoders (its freeze_vision_tower is read by nothing)."
    from omni_gspo.plan import model_sizes
    s = model_sizes(preset_config('avqa', 'npu-full', {'model.path': thinker}))
    assert s.towers == 0 and s.frozen == 0 and s.trainable > 0, s     # every weight trains, the towers included


def test_train_without_the_ascend_plugin_is_one_line(tmp_path, thinker):
    "`omni-gspo train … preset=npu-full` on a machine with an NPU (stand-in) but no vllm-ascend: one line, the package."
    sys.modules['torch_npu'] = types.ModuleType('torch_npu')
    sys.modules['torch_npu'].npu = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 16)
    try:
        with plugin(False):
            r = cli('train', 'recipe=avqa', 'preset=npu-full', f'model.path={thinker}', cwd=tmp_path)
    finally: sys.modules.pop('torch_npu')
    assert r.returncode == 2 and r.stderr.count('\n') == 1, r.stderr
    assert "vLLM on hardware.device='npu' runs through its platform plugin vllm_ascend" in r.stderr, r.stderr
    assert 'pip install vllm-ascend' in r.stderr and not (tmp_path/'runs').exists()


def test_preset_opd_teacher_is_a_second_checkpoint(tmp_path):
    from thinker import thinker_config
    for d in ('student', 'teacher'): thinker_config().save_pretrained(tmp_path/d)
    r = cli('config', 'recipe=mmk12', 'preset=gpu-opd-lora', 'model.path=student', 'algorithm.opd_teacher=teacher',
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    shown = printed(r.stdout)
    assert (shown['model.path'], shown['algorithm.opd_teacher']) == ('student', 'teacher')
    # TEACHER_MODEL's default
    same = cli('config', 'recipe=mmk12', 'preset=gpu-opd-lora', 'model.path=student', cwd=tmp_path)
    assert printed(same.stdout)['algorithm.opd_teacher'] == 'student', same.stderr


def test_user_overrides_beat_the_preset(thinker):
    r = cli('config', 'recipe=avqa', 'preset=gpu-lora', 'actor.optim.lr=1e-5', 'rollout.tensor_parallel_size=1',
            f'model.path={thinker}', 'trainer.max_steps=3')
    shown = printed(r.stdout)
    assert (shown['actor.optim.lr'], shown['rollout.tensor_parallel_size'], shown['rollout.n']) == (1e-5, 1, 16)
    # the preset's epochs: inert, left out
    assert (shown['trainer.max_steps'], shown['trainer.total_epochs']) == (3, 1)


@pytest.mark.parametrize('args,msg', [
    (('recipe=gsm8k', 'preset=npu-full'), "no preset 'npu-full' for recipe 'gsm8k'; presets for 'gsm8k': gpu-lora; "
                                          "all presets: gpu-lora (gsm8k, mmk12, avqa); npu-full (avqa); "
                                          "gpu-opd-lora (mmk12)"),
    (('recipe=avqa', 'preset=gpu-full'), "no preset 'gpu-full' for recipe 'avqa'; "
                                         "presets for 'avqa': gpu-lora, npu-full"),
])
def test_unknown_preset_is_one_clear_line(args, msg):
    r = cli('config', *args)
    assert r.returncode == 2 and r.stderr.count('\n') == 1 and msg in r.stderr, r.stderr


@pytest.mark.parametrize('verl,key', [('rollout.name=vllm', 'rollout.engine'),
                                      ('policy_loss.loss_mode=gspo', 'algorithm.policy_loss'),
                                      ('trainer.logger=console', 'logging.loggers'),
                                      ('trainer.project_name=gspo', 'trainer.output_dir'),
                                      (A + 'rollout.val_kwargs.top_p=0.7', 'rollout.val.top_p'),
                                      (A + 'rollout.tensor_model_parallel_size=2', 'rollout.tensor_parallel_size'),
                                      (A + 'rollout.gpu_memory_utilization=0.7', 'rollout.vllm.gpu_memory_utilization'),
                                      (A + 'actor.optim.lr=3e-6', "'actor.optim.lr'")])
def test_verl_key_names_ours(verl, key):
    r = cli('config', verl)
    assert r.returncode == 2 and r.stderr.count('\n') == 1 and key in r.stderr, r.stderr


def test_config_refuses_tensor_parallel_beyond_a_node(tmp_path, thinker):
    "The presets' TP=2 builds; a TP size not dividing a node's devices is refused with one line, naming the key."
    r = cli('train', 'recipe=gsm8k', 'preset=gpu-lora', 'hardware.device=cpu', 'hardware.gpus_per_node=1',
            'data.train_batch_size=16', f'model.path={thinker}', cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count('\n') == 1, r.stderr
    assert 'rollout.tensor_parallel_size=2 must divide hardware.gpus_per_node (1)' in r.stderr
    assert not (tmp_path/'runs').exists()


GPU_ONLY = ('rollout.vllm.cuda_graphs', 'rollout.vllm.gpu_memory_utilization',   # left out on a CPU (inert there)
            'rollout.vllm.cudagraph_capture_sizes', 'actor.param_offload', 'actor.optimizer_offload')

@pytest.mark.parametrize('preset,recipe', list(UPSTREAM))
def test_notebook_config_takes_the_preset(preset, recipe, thinker):
    "What a recipe notebook's `-p preset …` resolves to (its device set to this machine's, as `-p hardware cpu`)."
    c = notebook_config(recipe, 'cpu', thinker, preset=preset)
    for key, (_, value) in UPSTREAM[preset, recipe].items():
        if key not in GPU_ONLY: assert get_key(c, key) == ('cpu' if key == 'hardware.device' else ours(key, value)), key


@pytest.mark.parametrize('notebook,preset', [('train_avqa', 'gpu-lora'), ('train_gsm8k', 'gpu-lora'),
                                             ('train_mmk12_opd', 'gpu-opd-lora')])
def test_notebook_parameter_preset_reaches_the_config(tmp_path, notebook, preset, thinker):
    "`papermill nbs/train_….ipynb out.ipynb -p preset …` on a CPU machine: the preset's GPU stops the config cell."
    import torch
    if torch.cuda.is_available(): pytest.skip('this machine has a CUDA device')
    papermill = str(Path(sys.executable).with_name('papermill'))
    r = subprocess.run([papermill, str(ROOT/'nbs'/f'{notebook}.ipynb'), 'out.ipynb', '-p', 'preset', preset,
                        '-p', 'model_path' if notebook != 'train_mmk12_opd' else 'teacher_path', thinker],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    last = r.stderr.rstrip().splitlines()[-1]
    assert last.startswith("PlatformError: hardware.device='gpu' but torch sees no CUDA device"), r.stderr[-2000:]
    assert not (tmp_path/'runs').exists()


def test_readme_preset_commands_resolve(tmp_path):
    "The README's table: one command per preset, each resolving with `omni-gspo config` as written."
    import re
    from thinker import thinker_config
    thinker_config().save_pretrained(tmp_path/'Qwen3-Omni-30B-A3B-Instruct')
    cmds = re.findall(r'`omni-gspo train (recipe=\S+ preset=[^`]+)`', (ROOT/'README.md').read_text())
    assert sorted(re.search(r'preset=(\S+)', c)[1] + ' ' + re.search(r'recipe=(\S+)', c)[1] for c in cmds) == \
           sorted(f'{p} {r}' for p, r in PRESETS)
    for c in cmds:
        r = cli('config', *c.split(), cwd=tmp_path)
        assert r.returncode == 0, (c, r.stderr)


def test_opd_student_is_the_seeds_noised_teacher():
    "The seed's student (issue 41): the teacher with 25 % relative weight noise, `noised_copy`'s default and the OPD "
    "notebook's `noise` parameter alike (its papermill parameters cell, read as papermill reads it)."
    import inspect, nbformat
    from omni_gspo.model import noised_copy
    nb = nbformat.read(ROOT/'nbs'/'train_mmk12_opd.ipynb', as_version=4)
    cell = next(c for c in nb.cells if 'parameters' in c.metadata.get('tags', []))
    params = {}; exec(cell.source, {}, params)
    assert params['noise'] == inspect.signature(noised_copy).parameters['std'].default == 0.25, params


def test_readme_says_what_ran_where():
    "The README's table of presets (issue 41): one row per preset, saying what has run on which hardware and what not."
    lines = (ROOT/'README.md').read_text().splitlines()
    head = lines.index('| preset | planned on its upstream devices (CPU) | has run | has not run |')
    rows = [l.split('|')[1:-1] for l in lines[head + 2:] if l.startswith('|')][:len(PRESETS)]
    assert sorted(r[0].strip() for r in rows) == sorted(f'{p} {r}' for p, r in PRESETS), rows
    assert all(c.strip() for r in rows for c in r), rows   # every cell filled
