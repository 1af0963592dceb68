"""Each preset planned on its upstream devices by `omni-gspo plan`, next to the memory verl-omni reports (CPU, seconds).

    python bench/memory_planner/presets.py [--out bench/memory_planner/presets.json]

For every preset (`omni_gspo.presets.PRESETS`: one upstream launch script each) this runs what
`omni-gspo plan recipe=R preset=P model.path=<the real thinker> hardware.device_memory_gb=G` runs (`cli_config`, the
config checks `train` makes, `plan_memory`), with G the memory of the script's devices: 80 GB for the 4 x H800 GPU
scripts, 64 GB for the 16 x Ascend 910C script (and for `gpu-opd-lora`, our GPU adaptation of the Ascend OPD script:
2 x 8 x 80 GB). The model is the released thinker's config.json
(`../memory_plan/thinker.py`; the planner needs no weights). It plans each preset twice: as it is (the scripts'
`param_offload` / `optimizer_offload`) and without those two offloads; a preset with a teacher group
(`algorithm.opd_teacher_devices`) a third time with its teacher colocated instead (`teacher_colocated`), and a fourth
with its teacher ranks scoring through vLLM (`teacher_vllm`: `algorithm.opd_teacher_engine=vllm`).

Beside it, the memory the upstream reports (verl-project/verl-omni @ a1139baf, examples/gspo_trainer/README.md, its
"GPU memory" column, lines 294-295; the README's health criterion names `actor/perf/max_memory_allocated_gb`, torch's
count in the actor process, which leaves out the vLLM server's memory). Our comparable figure is `actor_torch_gib`:
the update phase's parts as torch counts them, less the sleeping engine's remains (vLLM runs in this process here, in
a server process there). It prints the table as JSON and writes it to `--out`.
"""
from __future__ import annotations
import argparse, json, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]

DEVICE_GB = {'gpu': 80, 'npu': 64}   # H800 80 GB (the GPU scripts), Ascend 910C 64 GB (the NPU script)
README = 'verl-omni examples/gspo_trainer/README.md @ a1139baf'
UPSTREAM = {   # (preset, recipe) -> (GB the upstream reports for its run, where from)
    ('gpu-lora', 'gsm8k'): (43, f'{README} line 294: ~43 GB (wandb mikecheung/gspo j5mro1tn)'),
    ('gpu-lora', 'mmk12'): (59, f'{README} line 295: ~59 GB (wandb mikecheung/gspo 2j8hxr36)'),
    ('gpu-lora', 'avqa'): (46, 'issue 41: ~46 GB (not in the README at a1139baf; the AVQA script came later)'),
    ('npu-full', 'avqa'): (None, 'none published'),
    ('gpu-opd-lora', 'mmk12'): (None, 'none published (PR #375 is open; its script ran on Ascend 910C)'),
}
NOT_TORCH = ('CUDA context', 'allocator reserve', 'vLLM asleep')   # outside the actor process's torch count upstream
NO_OFFLOADS = ('actor.param_offload=false', 'actor.optimizer_offload=false')
COLOCATED = ('hardware.nnodes=1', 'algorithm.opd_teacher_devices=0')   # the teacher on every actor rank's device
TEACHER_VLLM = ('algorithm.opd_teacher_engine=vllm',)   # each teacher rank a vLLM engine in the rollout's memory share


def plan_row(recipe:str, preset:str, ckpt:str, *extra:str)->dict:
    "What `omni-gspo plan` finds for the preset on its upstream device, with the `key=value` overrides `extra`."
    from omni_gspo.config import check_config
    from omni_gspo.launch import cli_config
    from omni_gspo.plan import plan_memory
    args = [f'recipe={recipe}', f'preset={preset}', f'model.path={ckpt}', *extra]
    cfg = cli_config(args)
    args.append(f'hardware.device_memory_gb={DEVICE_GB[cfg.hardware.device]}')
    cfg = cli_config(args)
    check_config(cfg)   # as `omni-gspo plan` does first
    p = plan_memory(cfg, check=check_config)
    r = lambda x: round(x, 2)
    return {'command': 'omni-gspo plan ' + ' '.join(args), 'devices': p.world, 'device': cfg.hardware.device,
            'device_gb': p.device_gb, 'peak_gib': r(p.peak_gb), 'fits': p.fits, 'spare_gib': r(p.device_gb - p.peak_gb),
            'update_gib': r(sum(p.update.values())), 'generate_gib': r(sum(p.generate.values())),
            'teacher_rank_gib': r(sum(p.teacher.values())),
            'actor_torch_gib': r(sum(v for k, v in p.update.items() if k not in NOT_TORCH)),
            'suggestions': [s for s, _ in p.suggestions]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(Path(__file__).with_name('presets.json')))
    a = ap.parse_args(argv)
    import omni_gspo.tasks  # noqa: F401  (registers the recipes)
    from omni_gspo.presets import PRESETS
    from thinker import thinker_config
    ckpt = Path(tempfile.mkdtemp())/'Qwen3-Omni-30B-A3B-Instruct'; thinker_config().save_pretrained(ckpt)
    rows = []
    for (preset, recipe), p in PRESETS.items():
        gb, source = UPSTREAM[preset, recipe]
        row = {'preset': preset, 'recipe': recipe, 'script': p.script, **plan_row(recipe, preset, str(ckpt)),
               'without_phase_offloads': plan_row(recipe, preset, str(ckpt), *NO_OFFLOADS)}
        if p.overrides.get('algorithm.opd_teacher_devices'):
            row['teacher_colocated'] = plan_row(recipe, preset, str(ckpt), *COLOCATED)
            row['teacher_vllm'] = plan_row(recipe, preset, str(ckpt), *TEACHER_VLLM)
        rows.append(row | {'upstream_gb': gb, 'upstream_source': source})
    text = json.dumps(rows, indent=1)
    print(text)
    Path(a.out).write_text(text + '\n')


if __name__ == '__main__': main()
