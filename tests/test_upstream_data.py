"""verl-omni's converted data trains as it is, and our converters keep the rows verl-omni's keep (issue 40).

Upstream: verl-omni `verl-project/verl-omni` at a1139baf (`examples/gspo_trainer/data_process/{mmk12,avqa}.py`,
`tests/utils/test_avqa_data_process_on_cpu.py`) and verl at the commit it pins, 8a694930
(`examples/data_preprocess/gsm8k.py`). The parquet files here are written the way those converters write them:
MMK12 and GSM8K through `datasets.Dataset.to_parquet` (no `audios` column; GSM8K no `images` either), here with
pyarrow and large strings; AVQA with `pandas.DataFrame(rows).to_parquet(engine='pyarrow', use_dictionary=False)`
(avqa.py, line 163), whose top-level text columns pandas 3 writes as large strings. Ground truths are stored as
upstream stores them: the stripped MMK12 answer (a lower-case letter included) and the raw AVQA solution."""
import json, os, random, subprocess, sys
import pandas as pd
import pyarrow as pa, pyarrow.parquet as pq
import pytest
from console import run_script   # tests/console.py
from omni_gspo.config import build_config
from omni_gspo.data import RL_COLUMNS, read_rl_rows
from omni_gspo.media import png_bytes, write_wav
from omni_gspo.rewards import score_batch
from omni_gspo.splits import load_split
from omni_gspo.tasks.avqa import SYSTEM_PROMPT, convert_avqa
from omni_gspo.tasks.common import beeps, shapes_image

TEXT = pa.large_string()
MESSAGES = pa.list_(pa.struct([('content', TEXT), ('role', TEXT)]))
REWARD_MODEL = pa.struct([('ground_truth', TEXT), ('style', TEXT)])


def media(d):
    "A PNG of two shapes and a WAV of two beeps under `d`: (png path, wav path)."
    (d/'media').mkdir(parents=True, exist_ok=True)
    png = d/'media/shapes.png'
    png.write_bytes(png_bytes(shapes_image([('red', 'circle'), ('blue', 'square')], random.Random(0))))
    return png, write_wav(d/'media/beeps.wav', beeps(2))


def write_upstream_mmk12(path, png):
    "Four rows as verl-omni's mmk12.py `make_map_fn` makes them (lines 141-164): two numeric answers, two letters."
    schema = pa.schema([('data_source', TEXT), ('prompt', MESSAGES),
                        ('images', pa.list_(pa.struct([('bytes', pa.binary())]))), ('ability', TEXT),
                        ('reward_model', REWARD_MODEL),
                        ('extra_info', pa.struct([(k, pa.int64() if k == 'index' else TEXT) for k in (
                            'dataset', 'id', 'index', 'options', 'raw_answer', 'raw_question', 'split', 'subject')]))])
    rows = []
    questions = [('How many shapes are there?', '2'), ('How many red shapes?', '1'),
                 ('How many shapes?\nA. 1\nB. 2\nC. 3', 'B'), ('How many blue shapes?\nA. 1\nB. 2', 'a')]
    for i, (q, a) in enumerate(questions):
        options = {m[0]: m[3:] for m in q.splitlines()[1:]}
        rows.append({'data_source': 'mmk12', 'prompt': [{'content': f'<image>\nBox it.\n\n{q}', 'role': 'user'}],
                     'images': [{'bytes': png.read_bytes()}], 'ability': 'math_vl',
                     'reward_model': {'ground_truth': a, 'style': 'rule'},
                     'extra_info': {'dataset': 'MMK12', 'id': str(i), 'index': i, 'options': json.dumps(options),
                                    'raw_answer': a, 'raw_question': q, 'split': 'train', 'subject': 'math'}})
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return [f'<answer>$\\boxed{{{x}}}$</answer>' for x in '21BA']   # a right answer to each, in full format


def write_upstream_avqa(path, png, wav):
    "Four rows as verl-omni's avqa.py `build_rl_row` makes them (lines 106-130), written as its line 163 writes them."
    options = {'A': '1', 'B': '2', 'C': '3'}
    rows = [{'data_source': 'avqa_r1_6k',
             'prompt': [{'role': 'system', 'content': 'Think, then give the option letter in <answer></answer>.'},
                        {'role': 'user', 'content': '<image><audio>How many beeps?\nOptions:\nA. 1\nB. 2\nC. 3'}],
             'images': [{'image': str(png)}], 'audios': [str(wav)], 'ability': 'audio_visual_qa',
             'reward_model': {'style': 'rule', 'ground_truth': solution},
             'extra_info': {'split': 'validation', 'index': i, 'problem_id': str(i), 'dataset': 'AVQA-R1-6K',
                            'problem_type': 'counting', 'raw_problem': 'How many beeps?', 'raw_solution': solution,
                            'options': json.dumps(options)}}
            for i, solution in enumerate(['<answer>B</answer>', '<answer> B </answer>'] * 2)]
    pd.DataFrame(rows).to_parquet(path, engine='pyarrow', index=False, use_dictionary=False)
    return ['<think>Two beeps.</think><answer>B</answer>'] * 4


def write_upstream_gsm8k(path):
    "Three rows as verl's gsm8k.py makes them (lines 61-85): no media columns."
    instruction = 'Let\'s think step by step and output the final answer after "####".'
    schema = pa.schema([('data_source', TEXT), ('prompt', MESSAGES), ('ability', TEXT), ('reward_model', REWARD_MODEL),
                        ('extra_info', pa.struct([('answer', TEXT), ('index', pa.int64()), ('question', TEXT),
                                                  ('split', TEXT)]))])
    rows = [{'data_source': 'openai/gsm8k', 'prompt': [{'content': f'What is {i} + 2? {instruction}', 'role': 'user'}],
             'ability': 'math', 'reward_model': {'ground_truth': str(i + 2), 'style': 'rule'},
             'extra_info': {'answer': f'{i} + 2 = {i + 2}\n#### {i + 2}', 'index': i, 'question': f'What is {i} + 2?',
                            'split': 'train'}} for i in range(3)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return [f'#### {i + 2}' for i in range(3)]


def flat(messages):
    "Chat messages with typed content parts written back as text with `<image>`/`<audio>` placeholders."
    def text(c): return c if isinstance(c, str) else ''.join(p['text'] if p['type'] == 'text' else f"<{p['type']}>"
                                                             for p in c)
    return [{'role': m['role'], 'content': text(m['content'])} for m in messages]


def test_upstream_parquet_reads_and_scores(tmp_path):
    "The trainer's data path reads each file as written, and each recipe's reward scores a right answer 1."
    png, wav = media(tmp_path)
    files = {'mmk12': (tmp_path/'mmk12.parquet', write_upstream_mmk12(tmp_path/'mmk12.parquet', png)),
             'avqa': (tmp_path/'avqa.parquet', write_upstream_avqa(tmp_path/'avqa.parquet', png, wav)),
             'gsm8k': (tmp_path/'gsm8k.parquet', write_upstream_gsm8k(tmp_path/'gsm8k.parquet'))}
    assert pq.read_schema(files['avqa'][0]).field('data_source').type == TEXT   # pandas' large strings, as upstream
    for recipe, (path, answers) in files.items():
        table = pq.read_table(path)
        exs, dropped = load_split(str(path), 'train file', 0, 0)
        assert dropped == {} and len(exs) == len(answers) == table.num_rows
        for e, row in zip(exs, table.to_pylist()):
            assert flat(e.messages) == [{'role': m['role'], 'content': m['content']} for m in row['prompt']]
            assert e.ground_truth == row['reward_model']['ground_truth']
            assert e.extra_info == row['extra_info'] and e.data_source == row['data_source']
            assert len(e.images) == ('<image>' in row['prompt'][-1]['content'])
            assert len(e.audios) == ('<audio>' in row['prompt'][-1]['content'])
        scores, details, metrics = score_batch([e.data_source for e in exs], answers, [e.ground_truth for e in exs],
                                               [e.extra_info for e in exs], build_config(recipe).reward)
        assert metrics['reward/errors'] == 0 and scores == [1.0] * len(answers), (recipe, details)
    assert [e.ground_truth for e in load_split(str(files['mmk12'][0]), 'train file', 0, 0)[0]][3] == 'a'
    for recipe in ('mmk12', 'gsm8k'):   # the plain reader too: absent media columns are empty lists
        rows = read_rl_rows(files[recipe][0])
        assert [list(r) for r in rows] == [list(RL_COLUMNS)] * len(rows) and all(r['audios'] == [] for r in rows)


def test_upstream_parquet_trains(tmp_path):
    "One `omni-gspo train` step on upstream's MMK12 file, validated on upstream's AVQA file, as they are."
    png, wav = media(tmp_path)
    write_upstream_mmk12(tmp_path/'mmk12.parquet', png)
    write_upstream_avqa(tmp_path/'avqa.parquet', png, wav)
    r = run_script('train', 'recipe=mmk12', f'data.train_file={tmp_path}/mmk12.parquet',
                   f'data.val_file={tmp_path}/avqa.parquet', 'trainer.max_steps=1', 'trainer.test_freq=1',
                   'data.train_batch_size=2', 'actor.ppo_mini_batch_size=2', 'rollout.n=2', 'rollout.response_length=8',
                   'logging.progress_bar=false', 'logging.plot=false', 'trainer.output_dir=run', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(l) for l in (tmp_path/'run/metrics.jsonl').read_text().splitlines()]
    assert [x['training/global_step'] for x in rows] == [1]
    assert 'val-core/avqa_r1_6k/reward/mean@1' in rows[0] and 'reward/mmk12/accuracy/mean' in rows[0], sorted(rows[0])
    assert rows[0]['reward/errors'] == 0


def upstream_avqa_record(**overrides):
    "The record of verl-omni's tests/utils/test_avqa_data_process_on_cpu.py (`_record`, lines 34-46)."
    return {'problem_id': 7, 'problem': 'Which event is visible and audible?', 'data_type': 'image_audio',
            'problem_type': 'multiple choice', 'options': ['A. rain', 'B. applause', 'C. traffic', 'D. birds'],
            'solution': '<answer>B</answer>', 'path': {'image': 'images/sample.png', 'audio': 'audios/sample.wav'},
            'data_source': 'OmniInstruct_v1-AVQA'} | overrides


def write_avqa_source(d, records):
    "An AVQA-R1-6K folder whose train split holds `records` and whose valid split one upstream record; real media."
    for split, recs in (('train', records), ('valid', [upstream_avqa_record()])):
        png, wav = media(d/split)
        (d/split/'images').mkdir(); (d/split/'audios').mkdir()
        png.rename(d/split/'images/sample.png'); wav.rename(d/split/'audios/sample.wav')
        (d/split/f'omni_rl_format_{split}.json').write_text(json.dumps(recs))


def test_avqa_converter_keeps_upstream_rows(tmp_path):
    "Upstream's converter cases, with real media, and lower-case option letters read as upstream reads them."
    lower = upstream_avqa_record(problem_id='lower', options=['a. rain', 'b) applause', 'c: traffic', 'd. birds'],
                                 solution='<answer>b</answer>')
    records = [upstream_avqa_record(), lower, upstream_avqa_record(solution='<answer>Z</answer>'),
               upstream_avqa_record(path={'image': 'images/none.png', 'audio': 'audios/sample.wav'})]
    write_avqa_source(tmp_path/'src', records)
    s = convert_avqa(tmp_path/'src', tmp_path/'out')['train']
    assert (s['kept'], s['dropped']['invalid_solution'], s['dropped']['missing_image']) == (2, 1, 1), s
    assert sum(s['dropped'].values()) == 2
    out = tmp_path/'out/train.parquet'
    row, low = pq.read_table(out).to_pylist()
    split_dir = (tmp_path/'src/train').absolute()
    assert (row['data_source'], row['ability']) == ('avqa_r1_6k', 'audio_visual_qa')
    assert row['prompt'][0]['content'] == SYSTEM_PROMPT
    assert row['prompt'][1]['content'].startswith('<image><audio>Which event is visible and audible?\nOptions:\n')
    assert row['images'] == [{'image': str(split_dir/'images/sample.png')}]
    assert row['audios'] == [str(split_dir/'audios/sample.wav')]
    assert row['reward_model']['ground_truth'] == '<answer>B</answer>'
    assert json.loads(row['extra_info']['options'])['B'] == 'applause' and row['extra_info']['problem_id'] == '7'
    assert low['prompt'][1]['content'] == row['prompt'][1]['content']      # `a. rain` is option A, as upstream
    assert (low['reward_model']['ground_truth'], low['extra_info']['options']) == (
        '<answer>B</answer>', row['extra_info']['options'])
    meta = pq.ParquetFile(out).metadata
    for c in range(meta.num_columns):   # upstream's check: no dictionary encoding (pyarrow 25's reader crash)
        assert not {'RLE_DICTIONARY', 'PLAIN_DICTIONARY'} & set(meta.row_group(0).column(c).encodings)


def test_converter_system_prompt_file(tmp_path):
    "`--system-prompt-file` replaces AVQA's system prompt, in the command as a user runs it."
    write_avqa_source(tmp_path/'src', [upstream_avqa_record()])
    (tmp_path/'system.txt').write_text('Answer with one letter.\n')
    p = subprocess.run([sys.executable, '-m', 'omni_gspo.tasks.avqa', '--input', str(tmp_path/'src'), '--output',
                        str(tmp_path/'out'), '--system-prompt-file', str(tmp_path/'system.txt')],
                       capture_output=True, text=True, timeout=300, env={**os.environ, 'PYTHONWARNINGS': 'ignore'})
    assert p.returncode == 0, p.stderr[-2000:]
    for split in ('train', 'validation'):
        prompt = pq.read_table(tmp_path/f'out/{split}.parquet').to_pylist()[0]['prompt']
        assert prompt[0] == {'role': 'system', 'content': 'Answer with one letter.'}
    (tmp_path/'empty.txt').write_text('\n')
    p = subprocess.run([sys.executable, '-m', 'omni_gspo.tasks.avqa', '--input', str(tmp_path/'src'), '--output',
                        str(tmp_path/'out2'), '--system-prompt-file', str(tmp_path/'empty.txt')],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and f"--system-prompt-file '{tmp_path}/empty.txt' is empty" in p.stderr, p.stderr
    assert not (tmp_path/'out2').exists()
