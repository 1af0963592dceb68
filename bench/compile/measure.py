"""Step 1 against step 2 of `omni-gspo train`, with `actor.compile` on and off (issue 26: step 1 took 220 s, 175 s of it
in the update with the GPU idle, compiling).

    python bench/compile/measure.py --model /dev/shm/thinker8 [--settings on,off] [--restart] [--prompts 16 --n 8 ...]

Runs the front door (`omni_gspo.launch.main`, what `omni-gspo train` runs) once per setting in a fresh
process for `--steps` steps on the built-in engine (`rollout.engine=hf`), with the compile caches in a fresh folder
(`--cache`, under `OMNI_GSPO_CACHE`'s `compile/`), then, with `--restart`, compile on once more in another fresh process
on the now warm cache: what a resume or a notebook restart pays. Reads each run's `metrics.jsonl` and writes, per run,
every step's `timing_s/*` and the step-1 minus step-2 difference of each (the first step's extra: compiles, warm-up).
"""
from __future__ import annotations
import argparse, json, os, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

def overrides(a, compile_on:bool, run:Path)->list[str]:
    "The `train` arguments of one run: the AVQA GPU-LoRA preset on one GPU, the built-in engine, `a`'s sizes."
    return ['recipe=avqa', 'preset=gpu-lora', f'model.path={a.model}', 'hardware.gpus_per_node=1',
            'rollout.tensor_parallel_size=1', 'rollout.engine=hf', f'data.train_batch_size={a.prompts}',
            f'actor.ppo_mini_batch_size={a.prompts}', f'rollout.n={a.n}', f'rollout.response_length={a.response}',
            f'data.max_prompt_length={a.max_prompt}', f'actor.compile={str(compile_on).lower()}',
            'reward.custom_function=ascii_fraction', 'trainer.test_freq=0', 'trainer.save_freq=0',
            f'trainer.max_steps={a.steps}', f'trainer.output_dir={run}', 'logging.loggers=console',
            'logging.progress_bar=false', *a.extra]

def one_run(a, name:str, compile_on:bool, env:dict)->dict:
    "Train in a fresh process; its steps' timings from `metrics.jsonl`."
    run = Path(a.runs)/name
    shutil.rmtree(run, ignore_errors=True)
    cmd = [sys.executable, '-c', 'import sys; from omni_gspo.launch import main; sys.exit(main())', 'train',
           *overrides(a, compile_on, run)]
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    Path(a.runs, f'{name}.log').write_text(p.stdout + p.stderr)
    metrics = run/'metrics.jsonl'
    rows = [json.loads(l) for l in metrics.read_text().splitlines()] if metrics.exists() else []
    steps = [{k: round(v, 3) for k, v in r.items() if k.startswith('timing_s/')} for r in rows]
    out = {'compile': compile_on, 'rc': p.returncode, 'process_s': round(wall, 1), 'steps': steps,
           'command': ' '.join(cmd[1:])}
    if len(steps) >= 2: out['step1_minus_step2_s'] = {k: round(v - steps[1].get(k, 0), 3) for k, v in steps[0].items()}
    if p.returncode: out['error_tail'] = (p.stdout + p.stderr)[-3000:]
    print(json.dumps({k: v for k, v in out.items() if k != 'error_tail'}), flush=True)
    return out

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--model', required=True, help='checkpoint folder (bench/front_door/checkpoint.py --layers 8)')
    ap.add_argument('--out', help="result file (default: $OUT/compile_<settings>.json)")
    ap.add_argument('--runs', default='/tmp/compile_runs', help='folder of the runs (replaced per run)')
    ap.add_argument('--cache', default='/tmp/compile_cache', help='the compile caches (emptied first)')
    ap.add_argument('--prompts', type=int, default=16); ap.add_argument('--n', type=int, default=8)
    ap.add_argument('--response', type=int, default=512); ap.add_argument('--max-prompt', type=int, default=1024)
    ap.add_argument('--steps', type=int, default=2)
    ap.add_argument('--settings', default='on,off', help="which runs, in order: 'on', 'off' (comma-separated)")
    ap.add_argument('--restart', action='store_true', help='then compile on again, in a new process, on the warm cache')
    ap.add_argument('extra', nargs='*', help='more key=value overrides')
    a = ap.parse_args()
    tag = a.settings.replace(',', '_') + ('_restart' if a.restart else '')
    a.out = a.out or str(Path(os.environ.get('OUT', '/tmp'))/f'compile_{tag}.json')
    Path(a.runs).mkdir(parents=True, exist_ok=True); shutil.rmtree(a.cache, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ('TORCHINDUCTOR_CACHE_DIR', 'TRITON_CACHE_DIR')}
    env |= {'TORCHINDUCTOR_CACHE_DIR': f'{a.cache}/inductor', 'TRITON_CACHE_DIR': f'{a.cache}/triton'}
    res = {'sizes': dict(prompts=a.prompts, n=a.n, response=a.response, max_prompt=a.max_prompt, steps=a.steps),
           'when': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), 'runs': {}}
    todo = [(f'compile_{s}', s == 'on') for s in a.settings.split(',')]
    todo += [('compile_on_restart', True)] if a.restart else []
    for name, on in todo:
        res['runs'][name] = one_run(a, name, on, env)
        Path(a.out).write_text(json.dumps(res, indent=1) + '\n')   # after every run: a later one may hit the time limit
    print(f'wrote {a.out}')

if __name__ == '__main__': main()
