"""The memory planner (`omni_gspo.plan`) against every committed measurement of a training configuration (CPU).

    python bench/memory_planner/compare.py [--out bench/memory_planner/result.json]

Each row is a run some earlier bench made on one H200 (143,771 MiB = 140.4 GiB), rebuilt here as the config that run
used, planned by `plan_memory`, and written next to what that run measured, with the file and entry it comes from.
The measured numbers are copied from those committed files, nothing else. Which of them calibrated one of the
planner's constants is said per row (`calibrates`): those rows are in-sample, the others are predictions.

Those benches built the model with `bench/memory_plan/thinker.py`'s `meta_policy` (not `load_model`), so their actor
had neither the fp32 output layer nor the fp32 residual stream: the configs say `model.fp32_logits=false
model.fp32_residual=false` to match. Rows measured by `measure.py` (the trainer's own path) are appended by it.
"""
from __future__ import annotations
import argparse, json, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]
H200_GIB = 143771 / 1024   # nvidia-smi's total of the bench machine, MiB -> GiB

def bench_config(path:str, prompt:int, response:int, budget:int, offload=False, ckpt=True, engine='hf', util=0.55,
                 rows=8)->dict:
    "The overrides `bench/memory_plan/bench.py`'s `build_actor` and `rollout_worker` used (one prompt, `rows` samples)."
    over = {'model.path': path, 'hardware.device': 'gpu', 'hardware.device_memory_gb': H200_GIB,
            'model.dtype': 'bfloat16', 'model.lora_rank': 32, 'model.lora_alpha': 64, 'model.fp32_logits': False,
            'model.fp32_residual': False, 'rollout.n': rows, 'data.train_batch_size': 1, 'actor.ppo_mini_batch_size': 1,
            'actor.fsdp': True, 'actor.fsdp_cpu_offload': offload, 'actor.activation_checkpointing': ckpt,
            'actor.ppo_max_token_len_per_gpu': budget, 'data.max_prompt_length': prompt,
            'rollout.response_length': response}
    if engine != 'hf': over |= {'rollout.engine': engine, 'rollout.vllm.gpu_memory_utilization': util}
    return over

MP, LOG = 'bench/memory_plan/result.json', 'bench/memory_plan/logs/h200_no_ckpt.log'
DEV, ALLOC = 'device_peak_gib', 'torch_max_allocated_gib'
STEP = dict(prompt=1536, response=512, budget=16384)     # the GSPO-step runs: 8 x (1,536 + 512) tokens
ACTOR = dict(prompt=1024, response=1024)                 # the actor-only runs: 8 x (1,024 + 1,024) tokens
ROWS = [   # (name, file and entry, measured kind, measured GiB, overrides, the constant it calibrates)
    ('hf GSPO step, 16k micro-batch', f'{MP} entry 1 (session 12)', DEV, 82.9, STEP, 'ALLOCATOR_RESERVE'),
    ('hf GSPO step, 16k micro-batch', f'{MP} entry 1 (session 12)', ALLOC, 77.58, STEP, ''),
    ('vLLM GSPO step (share 0.55), 16k', f'{MP} entry 2 (session 11)', DEV, 138.41, STEP | dict(engine='vllm'), ''),
    ('vLLM GSPO step (share 0.55), 16k', f'{MP} entry 3 (a53a007)', DEV, 138.41, STEP | dict(engine='vllm'), ''),
    ('actor only, 16k micro-batch', f'{MP} entry 7', ALLOC, 77.6, ACTOR | dict(budget=16384), 'LOGITS_BYTES'),
    ('actor only, 8k micro-batches', f'{MP} entry 8', ALLOC, 76.19, ACTOR | dict(budget=8192), ''),
    ('actor only, 4k micro-batches', f'{MP} entry 11', ALLOC, 69.56, ACTOR | dict(budget=4096), ''),
    ('actor only, CPU offload, 8k', f'{MP} entry 12', ALLOC, 16.69, ACTOR | dict(budget=8192, offload=True), ''),
    ('actor only, no checkpointing, 8k', f'{LOG} line 4', ALLOC, 118.62, ACTOR | dict(budget=8192, ckpt=False), ''),
    ('actor only, no checkpointing, 4k', f'{LOG} line 3', ALLOC, 90.79, ACTOR | dict(budget=4096, ckpt=False), ''),
]

# Rows whose peak is the update's, measured before `_chunk_scores` dropped two [chunk, vocabulary] fp32 tensors and
# the built-in engine's runs took expandable segments (2026-12-04): today's code holds less, the plan says so; kept as
# the record of what those runs measured, not as checks of today's plan.
BEFORE = "the update's peak, measured with the earlier logits code (5 live fp32 chunk tensors, not 3): not today's"

def plan_parts(p)->dict:
    "A plan's parts by phase, GiB rounded, as every row of result.json holds them."
    return {'parts_update_gib': {k: round(v, 2) for k, v in p.update.items()},
            'parts_generate_gib': {k: round(v, 2) for k, v in p.generate.items()}}

def row(name, src, kind, measured, over, cal, p)->dict:
    "One result entry: what was measured where, what the plan predicts, and the plan's parts."
    pred = p.peak_gb if kind == DEV else p.allocated_gb
    old = 'vLLM' not in name
    return {'name': name, 'source': src, 'measured': {kind: measured}, 'predicted': {kind: round(pred, 2)},
            'error_pct': round(100 * (pred - measured) / measured, 1), 'calibrates': cal,
            **({'superseded': BEFORE} if old else {}),
            'config': ({k: v for k, v in over.items() if k != 'model.path'}
                       | {'model': 'Qwen3-Omni-30B-A3B thinker, 48L'}),
            **plan_parts(p)}

HF = 'bench/hf_engine/result_h200_thinker.json'
ENGINE_ROWS = [   # (name, source, rows, measured torch peak GiB): plain `generate`, 256 + 256 tokens, bf16 head
    ('plain generate prefill + decode, 64 rows', f'{HF} row 1 (generate)', 64, 15.59),
    ('plain generate prefill + decode, 256 rows', f'{HF} row 3 (generate)', 256, 30.94),
]

def engine_row(name, src, rows, measured, folder)->dict:
    """The built-in engine's parts (KV cache, prefill logits) plus the slice's counted weights, against torch's peak;
    and the prefill's logits at every other prompt position, which transformers' plain `generate` (what the bench ran)
    computes for the thinker and `HFEngine` no longer does (`last_position_logits`, nbs/06_rollout.ipynb)."""
    from omni_gspo.config import build_config, config_dict
    from omni_gspo.plan import GIB, engine_parts, model_sizes, shape_of
    over = {'model.path': str(folder), 'model.dtype': 'bfloat16', 'model.fp32_logits': False, 'rollout.n': rows,
            'data.train_batch_size': 1, 'actor.ppo_mini_batch_size': 1, 'data.max_prompt_length': 256,
            'rollout.response_length': 256}
    cfg = build_config('gsm8k', over); c = config_dict(cfg); s = model_sizes(cfg)
    parts = {'weights (towers shrunk in the bench: left out)': s.frozen} | engine_parts(s, c, shape_of(c), None)
    P = c['data']['max_prompt_length']
    parts['plain generate: logits at the other prompt positions'] = rows * (P - 1) * s.vocab * 2   # bf16 head
    parts = {k: round(v / GIB, 2) for k, v in parts.items()}
    pred = sum(parts.values())
    return {'name': name, 'source': src, 'measured': {ALLOC: measured}, 'predicted': {ALLOC: round(pred, 2)},
            'error_pct': round(100 * (pred - measured) / measured, 1), 'calibrates': '',
            'config': {k: v for k, v in over.items() if k != 'model.path'} | {'model': 'thinker, 8 of 48 layers'},
            'parts_generate_gib': parts}

FD = 'bench/front_door'
# The front-door runs (`../front_door/run.sh`: `omni-gspo train recipe=avqa preset=gpu-lora` scaled to one H200, 32
# prompts x 16 samples x 512 tokens, vLLM colocated): (name, result file, text layers, overrides beyond run.sh's SCALE)
FRONT_ROWS = [
    ('front door, 8L, vLLM share 0.7 (the preset)', f'{FD}/result.json', 8, {}),
    ('front door, 48L, vLLM share 0.55', f'{FD}/h200_48L_32x16/result.json', 48,
     {'rollout.vllm.gpu_memory_utilization': 0.55}),
]
SCALE = {'hardware.gpus_per_node': 1, 'rollout.tensor_parallel_size': 1, 'data.train_batch_size': 32,
         'actor.ppo_mini_batch_size': 32, 'rollout.n': 16, 'rollout.response_length': 512,
         'reward.custom_function': 'ascii_fraction', 'trainer.test_freq': 0, 'hardware.device_memory_gb': 139.8}

def front_row(name, src, layers, over, folder_of)->dict:
    "A front-door run's highest device peak over its steps (train, resume, notebook legs) against today's plan."
    from omni_gspo.presets import preset_config
    from omni_gspo.plan import plan_memory
    res = json.loads((ROOT/src).read_text())
    measured = max(st['peak_gib'] for st in res['steps'])
    cfg = preset_config('avqa', 'gpu-lora', SCALE | over | {'model.path': str(folder_of(layers))})
    p = plan_memory(cfg, suggest=False)
    err = round(100 * (p.peak_gb - measured) / measured, 1)
    return {'name': name, 'source': f'{src} (the highest steps[].peak_gib)', 'layers': layers,
            'measured': {DEV: measured}, 'predicted': {DEV: round(p.peak_gb, 2)}, 'error_pct': err,
            'within_10pct': abs(err) <= 10, 'calibrates': '',
            'config': {'recipe': 'avqa', 'preset': 'gpu-lora'} | SCALE | over,
            **plan_parts(p)}

def replanned(r:dict, folder_of)->dict:
    "A `measure.py` row planned again by today's planner (its prediction when measured kept beside)."
    from omni_gspo.config import build_config, parse_overrides
    from omni_gspo.plan import plan_memory
    over = parse_overrides([f'{k}={v}' for k, v in r['config'].items()])
    over |= {'model.path': str(folder_of(r['layers'])), 'hardware.device': 'gpu',
             'hardware.device_memory_gb': r['device_gib']}
    p = plan_memory(build_config(r['recipe'], over), suggest=False)
    r = dict(r); r.setdefault('predicted_when_measured', r['predicted'])
    r['predicted'] = {'device_peak_gib': round(p.peak_gb, 2), 'torch_max_allocated_gib': round(p.allocated_gb, 2)}
    r['error_pct'] = round(100 * (p.peak_gb - r['measured']['device_peak_gib']) / r['measured']['device_peak_gib'], 1)
    r['within_10pct'] = abs(r['error_pct']) <= 10
    r |= plan_parts(p)
    return r

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=str(Path(__file__).with_name('result.json')))
    a = ap.parse_args()
    from thinker import thinker_config
    from omni_gspo.config import build_config
    from omni_gspo.plan import plan_memory
    folder = Path(tempfile.mkdtemp()); thinker_config().save_pretrained(folder)   # config.json only: no weights needed
    out = Path(a.out)
    slices = {}
    def folder_of(layers:int)->Path:
        if layers not in slices:
            slices[layers] = Path(tempfile.mkdtemp()); thinker_config(layers=layers).save_pretrained(slices[layers])
        return slices[layers]
    kept = [replanned(r, folder_of) for r in (json.loads(out.read_text()) if out.exists() else [])
            if r.get('source') == 'measure.py']
    rows = []
    for name, src, kind, measured, kw, cal in ROWS:
        over = bench_config(str(folder), **kw)
        rows.append(row(name, src, kind, measured, over, cal, plan_memory(build_config('gsm8k', over), suggest=False)))
        r = rows[-1]
        print(f"{name:36} {kind:24} measured {measured:7.2f}  predicted {r['predicted'][kind]:7.2f}  "
              f"{r['error_pct']:+5.1f} %" + (f'  (calibrates {cal})' if cal else '')
              + ('  superseded' if 'superseded' in r else ''))
    for name, src, n, measured in ENGINE_ROWS:
        rows.append(engine_row(name, src, n, measured, folder_of(8)))
        print(f"{name:36} {ALLOC:24} measured {measured:7.2f}  predicted {rows[-1]['predicted'][ALLOC]:7.2f}  "
              f"{rows[-1]['error_pct']:+5.1f} %")
    for name, src, layers, over in FRONT_ROWS:
        rows.append(front_row(name, src, layers, over, folder_of))
        print(f"{name:36} {DEV:24} measured {rows[-1]['measured'][DEV]:7.2f}  predicted "
              f"{rows[-1]['predicted'][DEV]:7.2f}  {rows[-1]['error_pct']:+5.1f} %")
    for r in kept:
        print(f"{r['name']:36} {DEV:24} measured {r['measured'][DEV]:7.2f}  predicted {r['predicted'][DEV]:7.2f}  "
              f"{r['error_pct']:+5.1f} %  (when measured: {r['predicted_when_measured'][DEV]:.2f})")
    out.write_text(json.dumps(rows + kept, indent=1) + '\n')

if __name__ == '__main__': main()
