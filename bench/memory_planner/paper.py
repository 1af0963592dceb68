"""The upstream verl-omni launch shapes planned on paper (CPU, no device): our trainer at those shapes, per device.

    python bench/memory_planner/paper.py [--out bench/memory_planner/paper.json]

Shapes from verl-omni's launch scripts (verl-project/verl-omni @ a1139baf, examples/gspo_trainer/): the 4 × H800 GPU
LoRA scripts for gsm8k and MMK12, and the 16 × Ascend 910C full-parameter AVQA script. Each is planned with the real
thinker's config.json (`../memory_plan/thinker.py`; no weights needed), next to the upstream's reported memory: its
`actor/perf/max_memory_allocated_gb` (torch's count in the actor process: vLLM's server memory is not in it), from
examples/gspo_trainer/README.md. Our comparable figure is the plan's torch count (`allocated_gb`); the device peak
(vLLM's share and the CUDA context included) is printed beside it.
"""
from __future__ import annotations
import argparse, json, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]

LORA = {'model.dtype': 'bfloat16', 'model.lora_rank': 32, 'model.lora_alpha': 64, 'actor.fsdp': True,
        'actor.fsdp_cpu_offload': True, 'actor.activation_checkpointing': True, 'rollout.engine': 'vllm',
        'rollout.n': 16, 'data.train_batch_size': 128, 'actor.ppo_mini_batch_size': 16, 'hardware.device': 'gpu',
        'hardware.gpus_per_node': 4, 'hardware.device_memory_gb': 79.6, 'rollout.vllm.gpu_memory_utilization': 0.8,
        'model.attn_implementation': 'flash_attention_2'}
SHAPES = [   # name, overrides, rollout tensor-parallel size, upstream's reported GB (None: none reported), its source
    ('gsm8k, 4 x H800 80 GB, LoRA r32',
     LORA | {'data.max_prompt_length': 2048, 'rollout.response_length': 8192, 'actor.ppo_max_token_len_per_gpu': 20480},
     2, 43, 'verl-omni examples/gspo_trainer/README.md: ~43 GB peak (wandb mikecheung/gspo j5mro1tn); health criterion '
     'max_memory_allocated_gb < 45'),
    ('MMK12, 4 x H800 80 GB, LoRA r32',
     LORA | {'data.max_prompt_length': 4096, 'rollout.response_length': 12288,
             'actor.ppo_max_token_len_per_gpu': 30720},
     2, 59, 'verl-omni examples/gspo_trainer/README.md: ~59 GB peak (wandb mikecheung/gspo 2j8hxr36)'),
    ('AVQA, 16 x Ascend 910C 64 GB, full parameters',
     {'model.dtype': 'bfloat16', 'model.lora_rank': 0, 'model.freeze_vision_tower': False,
      'model.freeze_audio_tower': False, 'actor.fsdp': True, 'actor.fsdp_cpu_offload': True,
      'actor.activation_checkpointing': True, 'rollout.engine': 'vllm', 'rollout.n': 16, 'data.train_batch_size': 128,
      'actor.ppo_mini_batch_size': 16, 'hardware.device': 'npu', 'hardware.gpus_per_node': 16,
      'hardware.device_memory_gb': 64, 'rollout.vllm.gpu_memory_utilization': 0.6, 'data.max_prompt_length': 4096,
      'rollout.response_length': 12288, 'actor.ppo_max_token_len_per_gpu': 20480},
     2, None, 'run_qwen3_omni_thinker_gspo_npu_avqa_v1.sh: no memory figure published'),
]

def plan_with_tp(cfg, tp:int):
    """`plan_memory`, with the rollout tensor-parallel size `tp` (through the config key where it exists, else set in
    the planner's view)."""
    from omni_gspo.config import config_dict, leaf_keys, set_key
    from omni_gspo.plan import MemoryPlan, _phases, device_memory, model_sizes
    if 'rollout.tensor_parallel_size' in leaf_keys():
        set_key(cfg, 'rollout.tensor_parallel_size', tp)
        from omni_gspo.plan import plan_memory
        return plan_memory(cfg, suggest=False)
    c = config_dict(cfg); c['rollout']['tensor_parallel_size'] = tp
    device, source = device_memory(cfg)
    update, gen, kv, sh = _phases(model_sizes(cfg), c, device)
    return MemoryPlan(update, gen, device, source, kv, sh.seq, sh.world)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=str(Path(__file__).with_name('paper.json')))
    a = ap.parse_args()
    from thinker import thinker_config
    from omni_gspo.config import build_config
    from omni_gspo.plan import OUTSIDE_TORCH, report
    folder = Path(tempfile.mkdtemp()); thinker_config().save_pretrained(folder)
    rows = []
    for name, over, tp, upstream, src in SHAPES:
        p = plan_with_tp(build_config('gsm8k', over | {'model.path': str(folder)}), tp)
        print(f'== {name} (rollout tensor parallel {tp})\n{report(p)}\n  upstream reported: {upstream} GB ({src})\n')
        # the actor process's torch count
        actor = sum(v for k, v in p.update.items() if k not in OUTSIDE_TORCH + ('vLLM asleep',))
        print(f'  our actor torch count (update phase): {actor:.2f} GiB\n')
        rows.append({'name': name, 'config': over, 'rollout_tensor_parallel_size': tp,
                     'planned_actor_torch_gib': round(actor, 2), 'planned_device_peak_gib': round(p.peak_gb, 2),
                     'fits': p.fits, 'upstream_reported_gb': upstream, 'upstream_source': src,
                     'parts_update_gib': {k: round(v, 2) for k, v in p.update.items()},
                     'parts_generate_gib': {k: round(v, 2) for k, v in p.generate.items()}})
    Path(a.out).write_text(json.dumps(rows, indent=1) + '\n')

if __name__ == '__main__': main()
