"""Measure (device): the memory planner's prediction against the device peak of a real `omni-gspo train` run.

    python bench/memory_planner/measure.py --name NAME [--layers 8] [--recipe avqa] -- key=value ...
    python bench/memory_planner/measure.py --merge FILE.json ...     # here: add entries a device run returned to
                                                                       result.json

The run is `omni_gspo.trainer.train` on the config `omni-gspo train recipe=RECIPE key=value ...` would build (defaults
added unless given: hardware.device=gpu, trainer.max_steps=2, trainer.test_freq=0, a temporary output_dir, no
progress bar), in this process, so the plan is made and checked exactly as `train` makes it before it loads anything.
While it runs, a thread samples the device's memory in use (`torch.cuda.mem_get_info`: total - free, every allocator
of the process, vLLM's sleep-mode pool included) every 5 ms and another `nvidia-smi`'s used memory (every process on
the device, a vllm_omni stage too) every 0.2 s; after it, torch's `max_memory_allocated` / `max_memory_reserved`.

`--layers N` (no model.path given): the Qwen3-Omni-30B-A3B thinker at its real widths with N text layers, random bf16
weights, the Qwen tokenizer and processor files, written by `../front_door/checkpoint.py` to `--checkpoint` (default
/dev/shm/thinker{N}) once and reused; N=48 is the full thinker (59 GiB: on the H200 machine only /dev/shm holds it).

One JSON entry (predicted and measured, the config, the plan's parts, the last step's metrics) is printed and written to
`--out` (default `$OUT/memory_planner_NAME.json` on the device machine, else appended to this folder's result.json).
"""
from __future__ import annotations
import argparse, json, os, shutil, subprocess, sys, tempfile, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]
RESULT = Path(__file__).with_name('result.json')

def args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--name', help='what this configuration is, e.g. "8L-vllm-16k"')
    ap.add_argument('--recipe', default='gsm8k')
    ap.add_argument('--layers', type=int, default=0,
                    help='build a real-width random thinker checkpoint with this many text layers')
    ap.add_argument('--checkpoint', default='', help='where --layers writes (and finds) that checkpoint')
    ap.add_argument('--out', default='',
                    help='write the entry here (default: $OUT/memory_planner_NAME.json, else append to result.json)')
    ap.add_argument('--merge', nargs='+', default=[], help='append the entries of these files to result.json and exit')
    ap.add_argument('--snapshot', action='store_true', help="record torch's allocation history and write what is live "
                    "at the last step's torch peak, grouped by where it was allocated, to $OUT/snapshot_NAME.json")
    ap.add_argument('overrides', nargs='*', help='key=value ... as for omni-gspo train')
    return ap.parse_args()

def append_result(entries:list[dict], path:Path=RESULT):
    "Append `entries` to the JSON list at `path` (temporary file + rename)."
    rows = json.loads(path.read_text()) if path.exists() else []
    tmp = path.with_suffix('.tmp'); tmp.write_text(json.dumps(rows + entries, indent=1) + '\n'); os.replace(tmp, path)

def real_width_checkpoint(layers:int, dest:Path)->Path:
    "The real-width random thinker with `layers` text layers at `dest`, written once by `../front_door/checkpoint.py`."
    if not (dest/'config.json').exists():
        subprocess.run([sys.executable, str(ROOT/'bench'/'front_door'/'checkpoint.py'), '--layers', str(layers),
                        '--out', str(dest)], check=True)
    return dest

class Sampler:
    "The largest value `read()` returns, polled by a thread every `dt` seconds while the block runs."
    def __init__(self, read, dt:float): self.read, self.dt, self.peak, self._stop = read, dt, 0.0, threading.Event()
    def _poll(self):
        while not self._stop.is_set():
            try: self.peak = max(self.peak, self.read())
            except Exception: return
            time.sleep(self.dt)
    def __enter__(self): self._t = threading.Thread(target=self._poll, daemon=True); self._t.start(); return self
    def __exit__(self, *exc): self._stop.set(); self._t.join()

def device_used_gib()->float:
    import torch
    free, total = torch.cuda.mem_get_info(); return (total - free) / 2**30

def smi_used_gib()->float:
    out = subprocess.run(['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader,nounits', '-i', '0'],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[0]) / 1024

def _where(frames, n=6)->str:
    "The innermost `n` frames of an allocation outside torch's own modules, as 'file:line fn' joined by ' < '."
    keep = [f for f in frames if '/torch/' not in f['filename'] or '/torch/nn/functional' in f['filename']]
    return ' < '.join(f"{'/'.join(f['filename'].split('/')[-2:])}:{f['line']} {f['name']}" for f in keep[:n])

def live_at_peak(trace:list[dict], top:int=30)->dict:
    "Replay one device's allocation trace: the tensors live when the traced allocations peaked, grouped by `_where`."
    run, peak, at = 0, 0, 0
    for i, e in enumerate(trace):
        run += {'alloc': e['size'], 'free_requested': -e['size']}.get(e['action'], 0)
        if run > peak: peak, at = run, i
    live = {}
    for e in trace[:at + 1]:
        if e['action'] == 'alloc': live[e['addr']] = e
        elif e['action'] == 'free_requested': live.pop(e['addr'], None)
    groups = {}
    for e in live.values():
        g = groups.setdefault(_where(e.get('frames', [])), [0, 0, set()])
        g[0] += e['size']; g[1] += 1; g[2].add(e['size'])
    rows = sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]
    return {'events': len(trace), 'peak_event': at, 'traced_live_at_peak_gib': round(peak / 2**30, 3),
            'groups': [{'gib': round(b / 2**30, 3), 'count': c,
                        'sizes_mib': sorted(round(x / 2**20, 1) for x in sz)[-4:], 'where': w}
                       for w, (b, c, sz) in rows]}

def run_config(a):
    "The config `omni-gspo train` would build, with this script's defaults where the overrides say nothing."
    from omni_gspo.config import build_config, parse_overrides
    over = parse_overrides(a.overrides)
    if a.layers and 'model.path' not in over:
        over['model.path'] = str(real_width_checkpoint(a.layers, Path(a.checkpoint or f'/dev/shm/thinker{a.layers}')))
    defaults = {'hardware.device': 'gpu', 'trainer.max_steps': 2, 'trainer.test_freq': 0, 'logging.progress_bar': False,
                'trainer.output_dir': tempfile.mkdtemp(prefix='planner_run_')}
    return build_config(a.recipe, defaults | over), over

def measure(a)->dict:
    import torch
    from omni_gspo.plan import plan_memory, report
    from omni_gspo.trainer import check_config, train
    cfg, over = run_config(a)
    plan = plan_memory(cfg, check=check_config)
    print(report(plan), flush=True)
    cuda = torch.cuda.is_available()   # a CPU run checks the script: no device figures
    if cuda: torch.cuda.reset_peak_memory_stats()
    if cuda and a.snapshot: torch.cuda.memory._record_memory_history(stacks='python', max_entries=400_000)
    err, t = None, time.perf_counter()
    smi_read = smi_used_gib if shutil.which('nvidia-smi') else (lambda: 0.0)
    with Sampler(device_used_gib if cuda else (lambda: 0.0), 0.005) as dev, Sampler(smi_read, 0.2) as smi:
        try: res = train(cfg)
        except Exception as e: err, res = f'{type(e).__name__}: {e}'[:2000], None
    measured = {'device_peak_gib': round(dev.peak, 2), 'nvidia_smi_peak_gib': round(smi.peak, 2),
                'torch_max_allocated_gib': round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
                'torch_max_reserved_gib': round(torch.cuda.max_memory_reserved() / 2**30, 2) if cuda else None}
    if cuda and a.snapshot:
        snap = torch.cuda.memory._snapshot(); torch.cuda.memory._record_memory_history(enabled=None)
        live = live_at_peak(snap['device_traces'][0])
        print('SNAPSHOT', json.dumps(live, indent=1), flush=True)
        if os.environ.get('OUT'):
            Path(os.environ['OUT'], f'snapshot_{a.name}.json').write_text(json.dumps(live, indent=1))
    last = json.loads(res.metrics.read_text().splitlines()[-1]) if res and res.metrics.exists() else {}
    pred = plan.peak_gb
    return {'name': a.name, 'source': 'measure.py', 'when': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
            'command': 'python bench/memory_planner/measure.py ' + ' '.join(sys.argv[1:]), 'recipe': a.recipe,
            'config': over, 'layers': a.layers or None, 'device': torch.cuda.get_device_name(0) if cuda else 'cpu',
            'device_gib': round(plan.device_gb or 0, 2),
            'ok': err is None, 'error': err, 'seconds': round(time.perf_counter() - t, 1), 'measured': measured,
            'predicted': {'device_peak_gib': round(pred, 2), 'torch_max_allocated_gib': round(plan.allocated_gb, 2)},
            'error_pct': round(100 * (pred - dev.peak) / dev.peak, 1) if dev.peak else None,
            'within_10pct': bool(dev.peak) and abs(pred - dev.peak) <= 0.1 * dev.peak,
            'parts_update_gib': {k: round(v, 2) for k, v in plan.update.items()},
            'parts_generate_gib': {k: round(v, 2) for k, v in plan.generate.items()},
            'last_step_metrics': {k: v for k, v in last.items() if k.startswith(('timing_s/', 'perf/', 'training/'))}}

def main():
    a = args()
    if a.merge:
        append_result([e for f in a.merge
                       for e in (lambda d: d if isinstance(d, list) else [d])(json.loads(Path(f).read_text()))])
        return
    if not a.name: sys.exit('measure.py: --name is required')
    entry = measure(a)
    print('RESULT', json.dumps(entry), flush=True)
    out = a.out or (f"{os.environ['OUT']}/memory_planner_{a.name}.json" if os.environ.get('OUT') else '')
    if out: Path(out).write_text(json.dumps(entry, indent=1) + '\n')
    else: append_result([entry])

if __name__ == '__main__': main()
