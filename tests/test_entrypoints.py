"""End-to-end checks of the user-facing entry points: the `omni-gspo` console script and the papermill recipe.

Training runs go through the installed package the way a user does (a subprocess / a Jupyter kernel), complementing
the notebook tests, which exercise the library in-process; what `config`, `--help` and a refused `train` print is
checked on the script's `main` in this process (`run_cli`), which `test_console_script_is_main` ties to the script."""
import json, os, subprocess, sys, time
from pathlib import Path
import papermill as pm
import pytest
from console import run_main as run_cli, run_script   # tests/console.py
from conftest import ENTROPY_TERM, VLLM_AWAY_FROM_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent


def only_run(runs):
    "The one run folder a recipe made under `runs` (each run gets a fresh folder named by its start time)."
    dirs = [d for d in runs.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_console_script_is_main(tmp_path):
    "The installed `omni-gspo` script prints and exits as `main` does: help, an error and a config (tests/console.py)."
    for args in (['--help'], ['train', 'recipe=gsm9k'], ['config', 'recipe=avqa', 'trainer.max_steps=3']):
        script, here = run_script(*args, cwd=tmp_path), run_cli(*args, cwd=tmp_path)
        assert (script.returncode, script.stdout, script.stderr) == (here.returncode, here.stdout, here.stderr), args
        assert script.stdout or script.stderr.startswith('omni-gspo: error: '), args


def test_cli_train_short_run(tmp_path):
    r = run_script('train', 'trainer.max_steps=2', 'data.train_batch_size=8', 'rollout.n=4', 'trainer.test_freq=2',
                   'data.generated_val_size=8', 'rollout.response_length=24', 'logging.progress_bar=false',
                   'trainer.output_dir=run', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    # the recipe default, saved
    assert json.loads((tmp_path/'run'/'config.json').read_text())['actor']['optim']['lr'] == 0.002
    tail = r.stdout.strip().splitlines()[-3:]
    assert [l.split(':')[0] for l in tail] == ['metrics', 'plot', 'checkpoint'], tail
    rows = [json.loads(l) for l in (tmp_path/'run'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [2 - 1, 2]
    assert 'val-core/openai/gsm8k/acc/mean@1' in rows[1]                   # validated after the last step
    assert (tmp_path/'run'/'checkpoints'/'step_2'/'adapter_model.safetensors').exists()
    assert json.loads((tmp_path/'run'/'config.json').read_text())['trainer']['max_steps'] == 2


@pytest.mark.parametrize('recipe', ['gsm8k', 'avqa'])
def test_cli_train_with_vllm_engine(cli_run, recipe):
    "gsm8k: the run test_numerics checks too (conftest: temperature 0.7, LoRA dropout); avqa: the recipe's sampling."
    args = (VLLM_AWAY_FROM_DEFAULTS if recipe == 'gsm8k' else
            ('train', 'recipe=avqa', 'rollout.engine=vllm', 'trainer.max_steps=2', 'trainer.test_freq=2',
             'data.train_batch_size=4', 'actor.ppo_mini_batch_size=2', 'rollout.n=4', 'logging.progress_bar=false',
             'rollout.vllm.max_num_seqs=16', 'data.generated_val_size=8', 'trainer.output_dir=run', ENTROPY_TERM))
    cwd, r = cli_run(*args)   # the engine reads its config section
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(l) for l in (cwd/'run'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1, 2]
    assert {'gsm8k': 'val-core/openai/gsm8k/acc/mean@1', 'avqa': 'val-core/avqa_r1_6k/reward/mean@1'}[recipe] in rows[1]
    # fp32 on CPU: vLLM's sampled log-probs equal the actor's recomputation after every weight sync (step 1's update
    # moved the weights, ENTROPY_TERM: a skipped sync gives 0.07 and a correlation under the bar, test_placement.py)
    for x in rows:
        assert (x['training/rollout_actor_probs_pearson_corr'] > 0.9999
                and x['training/rollout_probs_diff_max'] < 1e-3), x
        assert x['timing_s/sync'] > 0 and x['timing_s/wake'] >= 0 and x['timing_s/sleep'] >= 0


def test_sabotaged_weight_sync_stops_the_run(tmp_path):
    "A vLLM engine whose weight sync silently does nothing is caught by the parity guard and the run stops."
    script = ("import sys; from omni_gspo import vllm_engine; "
              "vllm_engine.VLLMEngine.sync_weights = lambda self, model, step=None: {}; "
              "from omni_gspo.launch import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, '-c', script, 'train', 'rollout.engine=vllm', 'trainer.max_steps=3',
                        'trainer.test_freq=0', 'data.train_batch_size=4', 'actor.ppo_mini_batch_size=2', 'rollout.n=4',
                        'actor.optim.lr=0.5', 'logging.progress_bar=false', 'trainer.output_dir=run'], cwd=tmp_path,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode != 0
    assert ('step 2: rollout and actor log-probs disagree' in r.stderr
            and 'weight sync did not take effect' in r.stderr), r.stderr[-2000:]
    rows = [json.loads(l) for l in (tmp_path/'run'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1]                 # step 1 (synced at start) was fine


@pytest.mark.parametrize('args,msg', [
    (['train', 'data.train_file=missing.parquet'], "train file 'missing.parquet' does not exist"),
    (['train', 'actor.optim.lr'], "malformed override 'actor.optim.lr': expected key=value"),
    (['train', 'recipe=gsm9k'], "unknown recipe 'gsm9k'; known recipes: gsm8k"),
    (['train', 'rollout.temprature=0.7'], "did you mean 'rollout.temperature'"),
    (['train', 'model.path=/nonexistent/model'], "model.path '/nonexistent/model': no config.json there"),
])
def test_cli_bad_input_is_one_clear_line(tmp_path, args, msg):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith('omni-gspo: error: ') and r.stderr.count('\n') == 1, r.stderr
    assert msg in r.stderr, r.stderr
    assert not (tmp_path/'runs').exists()          # nothing was started


def readme_commands()->list[list[str]]:
    "The arguments of every `omni-gspo` command in the README's bash blocks (continuation lines joined, comments cut)."
    import re, shlex
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT/'README.md').read_text(), flags=re.S)
    lines = [l for b in blocks for l in b.replace('\\\n', ' ').splitlines()]
    return [shlex.split(l.rpartition('omni-gspo')[2], comments=True) for l in lines if 'omni-gspo ' in l]


def test_readme_commands_pass_config(tmp_path):
    """Every `omni-gspo` command of the README, run as `omni-gspo config` (a named checkpoint folder made here): the
    config it builds is valid."""
    cmds = readme_commands()
    assert (len(cmds) >= 7 and any('hardware.gpus_per_node=8' in c for c in cmds)
            and any('hardware.nnodes=2' in c for c in cmds)), cmds
    for cmd in cmds:
        for a in cmd:
            if a.startswith('model.path='):    # the real checkpoint's config.json, as far as the checks read it
                (tmp_path/a[11:]).mkdir(parents=True, exist_ok=True)
                (tmp_path/a[11:]/'config.json').write_text(json.dumps({'model_type': 'qwen3_omni_moe',
                    'thinker_config': {'text_config': {'max_position_embeddings': 65536}}}))
        r = run_cli('config', *cmd[1:], cwd=tmp_path)
        assert cmd[0] in ('train', 'config') and r.returncode == 0, (cmd, r.stderr)
    two = next(c for c in cmds if 'hardware.nnodes=2' in c)
    r = run_cli('config', *[a for a in two[1:] if not a.startswith('actor.ppo_mini_batch_size')], cwd=tmp_path)
    # what the batch sizes are for
    assert (r.returncode == 2
            and 'actor.ppo_mini_batch_size (4) must be a multiple of the 16 ranks' in r.stderr), r.stderr


def test_issue_example_fails_at_config(tmp_path):
    """A GPU config with a checkpoint that is not there and batches the ranks do not divide: every problem at once,
    before any device."""
    r = run_cli('config', 'recipe=avqa', 'hardware.device=gpu', 'hardware.gpus_per_node=8', 'actor.fsdp=true',
                'rollout.engine=vllm', 'model.path=/nonexistent', cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == '', r.stdout
    lines = r.stderr.splitlines()
    assert lines[0] == 'omni-gspo: error: 3 problems in the config:', r.stderr
    assert [l.split()[1] for l in lines[1:]] == ['data.train_batch_size', 'actor.ppo_mini_batch_size',
                                                 "model.path"], r.stderr
    assert "model.path '/nonexistent': no config.json there" in r.stderr


@pytest.mark.parametrize('args',
                         [['--help'], ['train', '--help'], ['config', '--help'], ['train', 'recipe=avqa', '-h']])
def test_help_prints_usage(tmp_path, args):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith('usage: omni-gspo') and r.stderr == '', (r.stdout, r.stderr)


def test_papermill_train_gsm8k_parameters(tmp_path):
    "Papermill's parameters reach the run: `max_steps` and `overrides` (the other recipes' notebooks run at defaults)."
    out = tmp_path/'out.ipynb'
    pm.execute_notebook(str(ROOT/'nbs'/'train_gsm8k.ipynb'), str(out), cwd=str(tmp_path), kernel_name='python3',
                        progress_bar=False,
                        parameters={'max_steps': 2, 'overrides': {'trainer.output_dir': 'other', 'rollout.n': 2,
                                                                 'data.generated_val_size': 8}})   # validation as quick
    nb = json.loads(out.read_text())
    assert not nb['metadata']['papermill'].get('exception')
    rows = [json.loads(l) for l in (tmp_path/'other'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1, 2]             # max_steps=2, not the default 4
    saved = json.loads((tmp_path/'other'/'config.json').read_text())
    assert (saved['rollout']['n'], saved['data']['generated_val_size']) == (2, 8)
    assert (tmp_path/'other'/'metrics.html').exists() and not (tmp_path/'runs').exists()


@pytest.mark.parametrize('recipe,source', [('mmk12', 'mmk12'), ('avqa', 'avqa_r1_6k')])
def test_papermill_multimodal_recipes_defaults(tmp_path, recipe, source):
    out = tmp_path/'out.ipynb'
    pm.execute_notebook(str(ROOT/'nbs'/f'train_{recipe}.ipynb'), str(out), cwd=str(tmp_path), kernel_name='python3',
                        progress_bar=False)
    rows = [json.loads(l) for l in (only_run(tmp_path/'runs'/recipe)/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1, 2, 3, 4]
    assert f'val-core/{source}/reward/mean@1' in rows[-1]
    # the browser's state, saved with the run record
    widgets = json.dumps(json.loads(out.read_text())['metadata']['widgets'])
    # the dataset browser showed the first prompt and its image
    assert '&lt;image&gt;' in widgets and 'ImageModel' in widgets
    assert ('AudioModel' in widgets) == (recipe == 'avqa')             # and a player for the clip


def test_papermill_mmk12_opd_defaults(tmp_path):
    out = tmp_path/'out.ipynb'
    pm.execute_notebook(str(ROOT/'nbs'/'train_mmk12_opd.ipynb'), str(out), cwd=str(tmp_path), kernel_name='python3',
                        progress_bar=False)
    rows = [json.loads(l) for l in (only_run(tmp_path/'runs'/'mmk12_opd')/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1, 2, 3, 4]
    assert all(x['distillation/abs_loss'] > 0 for x in rows)          # the noised student differs from its teacher
    cfg = json.loads((only_run(tmp_path/'runs'/'mmk12_opd')/'config.json').read_text())
    assert cfg['algorithm']['opd_teacher'] and 'noised-' in cfg['model']['path']


def _has_cuda():
    import torch
    return torch.cuda.is_available()


def _has_torch_npu():
    import importlib.util
    return importlib.util.find_spec('torch_npu') is not None


MISSING_DEVICE = [
    pytest.param('npu', "hardware.device='npu' but this machine has no Ascend NPU (torch_npu not installed",
                 marks=pytest.mark.skipif(_has_torch_npu(), reason='torch_npu is installed here')),
    pytest.param('gpu', "hardware.device='gpu' but torch sees no CUDA device",
                 marks=pytest.mark.skipif(_has_cuda(), reason='this machine has a CUDA device')),
]


@pytest.mark.parametrize('hardware,msg', MISSING_DEVICE)
def test_papermill_missing_device_fails_fast(tmp_path, hardware, msg):
    """`papermill nbs/train_avqa.ipynb out.ipynb -p hardware npu` on a machine without it: stops in the config cell, in
    seconds, with one line."""
    t0 = time.monotonic()
    r = subprocess.run([str(Path(sys.executable).with_name('papermill')), str(ROOT/'nbs'/'train_avqa.ipynb'),
                        'out.ipynb', '-p', 'hardware', hardware], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    took = time.monotonic() - t0
    assert r.returncode != 0
    assert took < 60, f'took {took:.0f} s'                              # measured: about 5 s on 2 cores
    assert r.stderr.rstrip().splitlines()[-1].startswith('PlatformError: ' + msg), r.stderr[-2000:]
    cells = json.loads((tmp_path/'out.ipynb').read_text())['cells']
    errors = [o for c in cells for o in c.get('outputs', []) if o['output_type'] == 'error']
    assert len(errors) == 1 and len(errors[0]['traceback']) == 1 and msg in errors[0]['traceback'][0], errors
    assert not (tmp_path/'runs').exists()                                # nothing was started


@pytest.mark.parametrize('hardware,msg', MISSING_DEVICE)
def test_cli_missing_device_is_one_clear_line(tmp_path, hardware, msg):
    r = run_cli('train', f'hardware.device={hardware}', cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith('omni-gspo: error: ' + msg) and r.stderr.count('\n') == 1, r.stderr
    assert not (tmp_path/'runs').exists()


def test_live_dashboard_updates_one_display_in_a_kernel(tmp_path):
    """In a real Jupyter kernel (papermill), the dashboard is one output updated in place; metrics.html holds the same
    curves."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from pathlib import Path\nfrom omni_gspo.loggers import make_loggers\n"
        "lg = make_loggers(['console'], Path('run'), {}, live=True)\n"
        "for s in (1, 2, 3): lg.log({'reward/mean': 0.1 * s, 'actor/grad_norm': 1.0 / s}, s)\n"
        "lg.close()")]
    nbformat.write(nb, str(tmp_path/'dash.ipynb'))
    pm.execute_notebook(str(tmp_path/'dash.ipynb'), str(tmp_path/'out.ipynb'), cwd=str(tmp_path), kernel_name='python3',
                        progress_bar=False)
    outs = json.loads((tmp_path/'out.ipynb').read_text())['cells'][0]['outputs']
    figs = [o for o in outs if 'application/vnd.plotly.v1+json' in o.get('data', {})]
    assert len(figs) == 1, [o.get('data', {}).keys() for o in outs]
    traces = {t['name']: t for t in figs[0]['data']['application/vnd.plotly.v1+json']['data']}
    assert list(traces['reward/mean']['x']) == [1, 2, 3]                 # the one display shows every step
    assert [o['text'] for o in outs if o['output_type'] == 'stream'] and 'step 3: reward/mean=0.3' in ''.join(
        ''.join(o['text']) for o in outs if o['output_type'] == 'stream')
    html = (tmp_path/'run'/'metrics.html').read_text()
    # plotly escapes '/' in its JSON
    assert '"name":"reward\\u002fmean","x":[1,2,3]' in html and 'actor\\u002fgrad_norm' in html
    assert len((tmp_path/'run'/'metrics.jsonl').read_text().splitlines()) == 3


def test_check_nb_size(tmp_path):
    import nbformat
    tool = [sys.executable, str(ROOT/'tools'/'check_nb_size.py')]
    clean = nbformat.v4.new_notebook(); clean.cells = [nbformat.v4.new_code_cell('1 + 1')]
    nbformat.write(clean, str(tmp_path/'clean.ipynb'))
    with_out = nbformat.v4.new_notebook()
    with_out.cells = [nbformat.v4.new_code_cell(
        '1 + 1', outputs=[nbformat.v4.new_output('execute_result', {'text/plain': '2'}, execution_count=1)])]
    nbformat.write(with_out, str(tmp_path/'with_out.ipynb'))
    big = nbformat.v4.new_notebook(); big.cells = [nbformat.v4.new_markdown_cell('x' * 300_000)]
    nbformat.write(big, str(tmp_path/'big.ipynb'))
    r = subprocess.run([*tool, str(tmp_path/'clean.ipynb')], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    r = subprocess.run([*tool, str(tmp_path/'clean.ipynb'), str(tmp_path/'with_out.ipynb'), str(tmp_path/'big.ipynb')],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert ('with_out.ipynb: cell(s) [0] carry outputs' in r.stdout
            and 'big.ipynb: 300 kB, over the 200 kB limit' in r.stdout), r.stdout
    assert 'clean.ipynb' not in r.stdout.replace('3 notebooks', '')
    r = subprocess.run(tool, capture_output=True, text=True, cwd=ROOT)  # the repository's own notebooks
    assert r.returncode == 0, r.stdout


def test_hub_id_resolves_from_the_hugging_face_cache(tmp_path):
    """`model.path=org/name` (a Hub id, as verl-omni's NPU script gives `Qwen/Qwen3-Omni-30B-A3B-Instruct`) is found the
    way transformers finds it: offline, in a cache laid out as the Hub's (HF_HUB_CACHE), here holding the tiny model;
    an id found nowhere is refused naming the key and the cache it looked in."""
    import shutil
    from omni_gspo.tiny import tiny_model_dir
    rev, repo = '0123456789abcdef0123456789abcdef01234567', tmp_path/'hub'/'models--tiny-org--tiny-thinker'
    shutil.copytree(tiny_model_dir('small', 300), repo/'snapshots'/rev)
    (repo/'refs').mkdir(); (repo/'refs'/'main').write_text(rev)
    env = os.environ | {'HF_HUB_CACHE': str(tmp_path/'hub'), 'HF_HUB_OFFLINE': '1'}
    script = str(Path(sys.executable).with_name('omni-gspo'))
    r = subprocess.run([script, 'plan', 'model.path=tiny-org/tiny-thinker'], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and 'actor weights' in r.stdout, r.stderr[-2000:]   # transformers read its config
    r = subprocess.run([script, 'config', 'model.path=tiny-org/no-such-model'], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert (r.returncode == 2
            and r.stderr.startswith("omni-gspo: error: model.path 'tiny-org/no-such-model': ")), r.stderr
    assert f"Hugging Face cache {tmp_path/'hub'} (HF_HUB_OFFLINE is set: no download)" in r.stderr, r.stderr


def test_hub_is_asked_once_a_process(tmp_path):
    """Online, a Hub id the cache lacks is asked of the Hub once a process, however often the config check and the run
    look it up (an unreachable Hub costs about 25 s of retries a lookup), in one line of its own. The Hub here is a
    local server answering 404 to every request, which it counts."""
    import http.server, threading
    seen = []
    class NoSuchRepo(http.server.BaseHTTPRequestHandler):
        def _answer(self): seen.append(f'{self.command} {self.path}'); self.send_response(404); self.end_headers()
        do_GET = do_HEAD = _answer
        def log_message(self, *a): pass
    hub = http.server.ThreadingHTTPServer(('127.0.0.1', 0), NoSuchRepo)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if k != 'HF_HUB_OFFLINE'} | {
        'HF_HUB_CACHE': str(tmp_path/'hub'), 'HF_ENDPOINT': f'http://127.0.0.1:{hub.server_port}'}
    try: r = subprocess.run([str(Path(sys.executable).with_name('omni-gspo')), 'config', 'model.path=org/no-such'],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    finally: hub.shutdown()
    assert r.returncode == 2 and "model.path 'org/no-such': no folder of that name" in r.stderr, r.stderr
    asked = [s for s in seen if '/org/no-such/' in s]   # (huggingface_hub also asks the Hub other things)
    assert asked == ['HEAD /org/no-such/resolve/main/config.json'], seen   # once: the config.json's HEAD
    asking = [l for l in r.stderr.splitlines() if 'asking the Hub' in l]
    assert len(asking) == 1 and f'http://127.0.0.1:{hub.server_port}' in asking[0], r.stderr
    assert '(asked once in this process)' in r.stderr, r.stderr
