"""The compiled actor's kernel cache across processes (issue 42): with `actor.compile=true` the `ActorWorker` compiles
its decoder layers (`compile_units`, nbs/07b_fsdp.ipynb), and every call runs with torch.compile's caches in
`$OMNI_GSPO_CACHE/compile/` (`compile_caches`, nbs/00a_platform.ipynb).

Each "process" is a fresh Python process that builds the real `ActorWorker` on a tiny thinker and scores rollouts with
`learner.logprobs` (bucketed widths, as the trainer's old log-probs), with its own `TMPDIR` (where torch's default
cache lives) and one shared project cache folder. Compiles are counted with torch's counters, not seconds: inductor's
FX-graph cache hits and misses (a miss is a graph compiled to kernels), AOTAutograd's cache hits, and dynamo's graphs.
- The same config in a second process compiles nothing: one FX-graph hit, no miss, even though, as an in-process vLLM
  engine does (vLLM 0.26 `compilation/compiler_interface.py:477-480`), the process points the cache variables
  elsewhere after the worker was built.
- Another shape bucket (64 and 80 tokens) needs no compile: the layers' sizes are marked dynamic from the first call,
  so one graph (dynamo's `unique_graphs` = 1) serves both. (A micro-batch with no padding at all, every row exactly a
  bucket wide, gets no attention mask from transformers and compiles one more graph, once; the widths here are padded.)
  A change the graph depends on does compile: the same model in bf16 is a miss.
- Another model finds no entry it could load: the same checkpoint with 3 experts per token instead of 2 (same tensors,
  other layer code) is a miss, and its log-probs are its own eager ones, not the first model's. Another checkpoint of
  the same architecture (other weights) is a hit, with its own log-probs: weights are inputs of the graph, not part of
  its key.

Every compiled result is compared with the same worker's log-probs with compilation off (`force_eager`). The no-grad
graph keeps this within about a minute and a half of CPU; the update's graphs (forward and backward) would take minutes
to compile here, and their shape behaviour is tested without inductor in nbs/07b_fsdp.ipynb (`compiles`).
"""
import json, os, shutil, subprocess, sys
from pathlib import Path
import torch
from safetensors.torch import load_file, save_file

WORKER = r'''
import json, os, sys, torch
from torch._dynamo.utils import counters
from omni_gspo.config import build_config
from omni_gspo.model import adapter_for, load_tokenizer, resolve_model_path
from omni_gspo.rollout import Rollout
from omni_gspo.workers import ActorWorker

def rollout(prompt, response):
    "Two rows of `prompt` + `response` fixed tokens."
    ids = torch.randint(20, 200, (2, prompt + response), generator=torch.Generator().manual_seed(prompt))
    one = lambda n: torch.ones(2, n, dtype=torch.long)
    return Rollout(ids[:, :prompt], one(prompt), ids[:, prompt:], one(response), torch.zeros(2, response),
                   ['stop'] * 2, torch.tensor([0, 0]))

def counts():
    return {'fx_hit': counters['inductor']['fxgraph_cache_hit'], 'fx_miss': counters['inductor']['fxgraph_cache_miss'],
            'aot_hit': counters['aot_autograd']['autograd_cache_hit'], 'graphs': counters['stats']['unique_graphs']}

out = []
for case in json.loads(sys.argv[1]):
    torch._dynamo.reset(); counters.clear()
    cfg = build_config('gsm8k', {'model.path': case['path'], 'model.dtype': case['dtype'], 'actor.compile': True})
    path = resolve_model_path(cfg.model.path, cfg.model.warm_start_steps)
    aw = ActorWorker(cfg, path, load_tokenizer(path), adapter_for(path), total_steps=1, log=lambda s: None)
    os.environ['TORCHINDUCTOR_CACHE_DIR'] = os.environ['TRITON_CACHE_DIR'] = case['elsewhere']  # as vLLM's engine start
    ros = [rollout(*s) for s in case['shapes']]
    with torch.compiler.set_stance('force_eager'): eager = [aw.learner.logprobs(ro) for ro in ros]
    got = [aw.learner.logprobs(ro) for ro in ros]
    err = max(float((g - e).abs().max()) for g, e in zip(got, eager))
    out.append(counts() | {'err': err, 'logprobs': got[0].tolist()})
    aw.close()
print(json.dumps(out))
'''

def run_case(tmp:Path, name:str, cases:list[dict])->list[dict]:
    ("Counters, compiled-vs-eager error and first log-probs of each of `cases` (model folder, dtype, (prompt, "
     "response) shapes), run in one fresh process (own TMPDIR) on the shared cache `tmp/cache`.")
    (tmp/name).mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('TORCHINDUCTOR_CACHE_DIR', 'TRITON_CACHE_DIR')}
    env |= {'OMNI_GSPO_CACHE': str(tmp/'cache'), 'TMPDIR': str(tmp/name), 'HF_HUB_OFFLINE': '1',
            'PYTHONWARNINGS': 'ignore'}
    for c in cases: c['elsewhere'] = str(tmp/name/'elsewhere')
    r = subprocess.run([sys.executable, '-c', WORKER, json.dumps(cases)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])

def variant(src:Path, dst:Path, top_k:int|None=None, noise:float=0.)->Path:
    "A copy of the checkpoint `src` at `dst`: `top_k` experts per token in its config, or `noise` added to its weights."
    shutil.copytree(src, dst)
    if top_k:
        c = json.loads((dst/'config.json').read_text())
        c['text_config']['num_experts_per_tok'] = top_k
        (dst/'config.json').write_text(json.dumps(c))
    if noise:
        w = load_file(dst/'model.safetensors'); g = torch.Generator().manual_seed(1)
        save_file({k: v + noise * torch.randn(v.shape, generator=g) if v.is_floating_point() else v
                   for k, v in w.items()}, dst/'model.safetensors', metadata={'format': 'pt'})
    return dst

def test_compile_cache_across_processes(tmp_path):
    from omni_gspo.tiny import tiny_model_dir
    tiny = tiny_model_dir('small', 300)           # built once in the real cache; copied here
    model = lambda p, dtype='float32', shapes=((30, 20),): {'path': str(p), 'dtype': dtype, 'shapes': shapes}
    one, fx = (30, 20), lambda r: (r['fx_miss'], r['fx_hit'])
    (first,) = run_case(tmp_path, 'first', [model(tiny)])                            # 50 tokens: the 64 bucket
    assert fx(first) == (1, 0), first                          # cold: one graph compiled
    entries = tmp_path/'cache'/'compile'/'inductor'/'fxgraph'
    assert any(entries.rglob('*')), 'nothing written under $OMNI_GSPO_CACHE/compile/inductor'
    again, bf16 = run_case(tmp_path, 'again', [model(tiny, shapes=(one, (50, 25))), model(tiny, 'bfloat16')])
    assert (fx(again), again['aot_hit'], again['graphs']) == ((0, 1), 1, 1), again   # buckets 64 and 80: one graph
    assert not [p for p in (tmp_path/'again').rglob('elsewhere/**/*') if p.is_file()]   # none where vLLM points
    assert fx(bf16) == (1, 0), bf16                                 # another dtype: compiled
    other, noised = run_case(tmp_path, 'other', [model(variant(tiny, tmp_path/'top3', top_k=3)),
                                                 model(variant(tiny, tmp_path/'noised', noise=0.05))])
    assert fx(other) == (1, 0), other                               # other layer code: compiled, not loaded
    assert fx(noised) == (0, 1), noised                             # other weights: the same kernels
    for r in (first, again, other, noised): assert r['err'] < 1e-4, r    # compiled = eager (fp32)
    assert bf16['err'] < 0.02 * torch.tensor(bf16['logprobs']).abs().max(), bf16   # bf16: a few roundings
    for r in (other, noised):                                       # their own log-probs, not the first model's
        assert torch.tensor(r['logprobs']).sub(torch.tensor(first['logprobs'])).abs().max() > 1e-2
