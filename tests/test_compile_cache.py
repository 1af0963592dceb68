"""The compiled actor's kernel cache across processes (issue 42): `compile_units` (nbs/07b_fsdp.ipynb) runs every call
with torch.compile's caches in `$OMNI_GSPO_CACHE/compile/` (`compile_caches`, nbs/00a_platform.ipynb).

Each case is a fresh process on a fresh machine as far as torch can tell (its own `TMPDIR`, where torch's default
cache lives) sharing one project cache folder. Recompiles are counted with torch's own counters (inductor's FX-graph
cache hits and misses, AOTAutograd's), not seconds:
- a second process with the same model and shapes compiles nothing, even though, as an in-process vLLM engine does
  (vLLM 0.26 `compilation/compiler_interface.py:477-480`), the process points the cache variables elsewhere after the
  units were compiled;
- another forward width (shape bucket) loads the same graph: the units' sizes are dynamic from the first call, so a
  new bucket needs no new kernels;
- another model finds no entry it could load (the entries are named by a hash of the graph) and compiles its own, whose
  log-probs equal the uncompiled model's.

The model is the tiny Qwen3 of `07b_fsdp`: its decoder layers compile in a fraction of the thinker's time, and the cache
does not depend on the model family.
"""
import json, os, subprocess, sys
from pathlib import Path
import pytest

WORKER = r'''
import json, os, sys, torch
from torch._dynamo.utils import counters
from omni_gspo.tiny import tiny_model_dir
from omni_gspo.model import load_tokenizer
from omni_gspo.fsdp import compile_units
from omni_gspo.logprobs import completion_logprobs
a = json.loads(sys.argv[1])
torch.manual_seed(0)
path = tiny_model_dir('small', 300)
from transformers import AutoModelForCausalLM
from omni_gspo.vllm_engine import tiny_causal_lm_config
c = tiny_causal_lm_config(load_tokenizer(path))
c.intermediate_size *= a['mlp_times']            # another model: other weight shapes, so another graph
m = AutoModelForCausalLM.from_config(c, dtype=torch.float32)
ids = torch.randint(20, 400, (2, max(a['tokens'])), generator=torch.Generator().manual_seed(0))
am = torch.ones_like(ids)
with torch.no_grad(): eager = [completion_logprobs(m, ids[:, :n], am[:, :n], 4) for n in a['tokens']]
compile_units(m)
os.environ['TORCHINDUCTOR_CACHE_DIR'] = os.environ['TRITON_CACHE_DIR'] = a['elsewhere']   # as vLLM's engine start
with torch.no_grad(): err = max(float((completion_logprobs(m, ids[:, :n], am[:, :n], 4) - e).abs().max())
                                for n, e in zip(a['tokens'], eager))
c = counters
print(json.dumps({'fx_hit': c['inductor']['fxgraph_cache_hit'], 'fx_miss': c['inductor']['fxgraph_cache_miss'],
                  'aot_hit': c['aot_autograd']['autograd_cache_hit'], 'err': err}))
'''

def run_case(tmp:Path, name:str, mlp_times:int, tokens:list[int])->dict:
    ("Counters of one fresh process (own TMPDIR) that compiles a tiny Qwen3's units (MLP `mlp_times` as wide) and "
     "scores `tokens`-wide batches.")
    (tmp/name).mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('TORCHINDUCTOR_CACHE_DIR', 'TRITON_CACHE_DIR')}
    env |= {'OMNI_GSPO_CACHE': str(tmp/'cache'), 'TMPDIR': str(tmp/name), 'HF_HUB_OFFLINE': '1',
            'PYTHONWARNINGS': 'ignore'}
    # the tiny checkpoints are built once in the real cache; the copy here shares them
    real = Path(os.environ.get('OMNI_GSPO_CACHE') or Path.home()/'.cache'/'omni_gspo')
    (tmp/'cache').mkdir(exist_ok=True)
    for d in real.glob('tiny-thinker-*'):
        if not (tmp/'cache'/d.name).exists(): (tmp/'cache'/d.name).symlink_to(d)
    arg = json.dumps({'mlp_times': mlp_times, 'tokens': tokens, 'elsewhere': str(tmp/name/'elsewhere')})
    r = subprocess.run([sys.executable, '-c', WORKER, arg], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])

def test_compile_cache_across_processes(tmp_path):
    first = run_case(tmp_path, 'first', 1, [64])
    assert (first['fx_miss'], first['fx_hit']) == (1, 0), first      # cold: one graph compiled
    entries = tmp_path/'cache'/'compile'/'inductor'
    assert any(entries.rglob('*')), 'nothing written under $OMNI_GSPO_CACHE/compile/inductor'
    again = run_case(tmp_path, 'again', 1, [64, 80])        # same model; a second bucket too
    assert (again['fx_miss'], again['fx_hit'], again['aot_hit']) == (0, 1, 1), again
    assert not (tmp_path/'again'/'elsewhere').exists()              # nothing went where vLLM would point
    other = run_case(tmp_path, 'other', 2, [64])                  # another model, the same cache
    assert (other['fx_miss'], other['fx_hit'], other['aot_hit']) == (1, 0, 0), other
    for r in (first, again, other): assert r['err'] < 1e-4, r       # compiled log-probs = eager ones (fp32)
