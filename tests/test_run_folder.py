"""A run folder is a contract (issue 39): one writer, complete-or-absent checkpoints, whole metrics rows, pinned data.

Faults are made for real where this machine allows: two `omni-gspo train` processes on one folder, a SIGKILLed holder,
a tmpfs that fills up (mounted here; the tests that need it are skipped, saying why, where `mount` is not allowed),
a training parquet replaced by other valid rows between a kill and its resume."""
import json, os, signal, socket, subprocess, sys, textwrap, time
from pathlib import Path
import pytest
import torch

CLI = str(Path(sys.executable).with_name('omni-gspo'))
SMALL = ['trainer.test_freq=0', 'data.train_batch_size=4', 'actor.ppo_mini_batch_size=2', 'rollout.n=4',
         'rollout.response_length=24', 'logging.progress_bar=false', 'logging.plot=false']


def cli(*args, cwd, timeout=600):
    return subprocess.run([CLI, 'train', *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def steps(run):
    return [json.loads(l)['training/global_step'] for l in (run/'metrics.jsonl').read_text().splitlines()]


def wait_for(cond, p, what, limit=600):
    deadline = time.time() + limit
    while not cond():
        assert p.poll() is None and time.time() < deadline, f'the run ended before {what}'
        time.sleep(0.05)


def test_one_writer_and_a_killed_holder_resumes(tmp_path):
    """A second `train` or `resume=auto` on a folder in use is refused in one line naming the holder's pid and host;
    once the holder is SIGKILLed the resume runs, removes the half-written checkpoint it left, drops a torn last
    metrics row (saying so), falls back past a truncated newest checkpoint (saying so, in one line) and ends with
    every step once. The holder is asked for 100 steps so that it is still running when the others try; the resume
    stops one step after the newest checkpoint."""
    run = tmp_path/'run'
    holder = [CLI, 'train', *SMALL, 'trainer.max_steps=100', 'trainer.save_freq=1', 'trainer.output_dir=run']
    p = subprocess.Popen(holder, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (run/'run.lock').exists() and (run/'run.lock').read_text(), p, 'it locked its folder')
        for extra in ([], ['trainer.resume=auto']):
            r = cli(*SMALL, 'trainer.output_dir=run', *extra, cwd=tmp_path)
            assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
            since = json.loads((run/'run.lock').read_text())['since']
            assert r.stderr.strip().splitlines() == [
                f'omni-gspo: error: run folder {run} is in use by pid {p.pid} on host {socket.gethostname()} '
                f'since {since}: one run writes a run folder at a time'], r.stderr
        assert p.poll() is None, 'the holder ended before the second writer was tried'
        wait_for(lambda: sum((d/'state.json').exists() for d in (run/'checkpoints').glob('step_*')) >= 2, p,
                 'two checkpoints were saved')
    finally:
        p.send_signal(signal.SIGKILL); p.wait()
    done = max(int(d.name.split('_')[1]) for d in (run/'checkpoints').glob('step_*') if (d/'state.json').exists())
    (run/'checkpoints'/f'.step_{done + 1}.x1y2').mkdir()                   # as a kill mid-save leaves it
    shard = next((run/'checkpoints'/f'step_{done}').glob('*.distcp'))
    os.truncate(shard, shard.stat().st_size // 2)                          # the newest checkpoint damaged
    with open(run/'metrics.jsonl', 'a') as f: f.write('{"training/global_step": 9, "rew')   # a torn last row
    said = subprocess.run([CLI, 'config', 'trainer.output_dir=run', 'trainer.resume=auto'], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)   # `config` says what the resume will do
    told = [l for l in said.stderr.splitlines() if l.startswith('skipping damaged')]
    assert said.returncode == 0 and len(told) == 1 and told[0].startswith(
        f'skipping damaged checkpoint step_{done}, falling back to the one before it: {shard}: truncated'), said.stderr
    r = cli('trainer.output_dir=run', 'trainer.resume=auto', f'trainer.max_steps={done + 1}', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    removed = [l for l in r.stdout.splitlines() if l.startswith('removed what a killed run left half-written in')]
    assert len(removed) == 1 and f'.step_{done + 1}.x1y2' in removed[0], r.stdout[-3000:]
    assert f"{run/'metrics.jsonl'}: dropped a torn last line" in r.stdout, r.stdout[-3000:]
    falls = [l for l in r.stdout.splitlines() if l.startswith('skipping damaged checkpoint')]
    assert len(falls) == 1 and falls[0].startswith(f'skipping damaged checkpoint step_{done}, falling back to the '
                                                   f'one before it: {shard}: truncated (a shard of'), falls
    assert f"resumed from {run/'checkpoints'/f'step_{done - 1}'} at step {done}" in r.stdout, r.stdout[-3000:]
    assert steps(run) == list(range(1, done + 2))
    assert sorted(p.name for p in (run/'checkpoints').iterdir()) == [f'step_{done}', f'step_{done + 1}']


def test_time_named_runs_started_in_the_same_second_get_two_folders(tmp_path):
    "Two runs into `runs/{time}` whose clocks read the same second: two folders, each a whole one-step run."
    code = ("import sys, time; time.strftime = lambda *a: '20261205-101500'; from omni_gspo.launch import main; "
            "sys.exit(main(sys.argv[1:]))")
    args = ['train', *SMALL, 'trainer.max_steps=1', 'trainer.output_dir=runs/{time}']
    ps = [subprocess.Popen([sys.executable, '-c', code, *args], cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in ps]
    assert [p.returncode for p in ps] == [0, 0], [o[1][-2000:] for o in outs]
    runs = sorted((tmp_path/'runs').iterdir())
    assert [d.name for d in runs] == ['20261205-101500', '20261205-101500-2']
    assert all(steps(d) == [1] for d in runs)


@pytest.fixture
def tmpfs(tmp_path):
    "`tmpfs(kib)`: a fresh tmpfs of that size (unmounted afterwards); skipped where mounting is not allowed."
    made = []
    def mount(kib:int)->Path:
        d = tmp_path/f'tmpfs{len(made)}'; d.mkdir()
        r = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={kib}k', 'tmpfs', str(d)], capture_output=True,
                           text=True)
        if r.returncode: pytest.skip(f'cannot mount a tmpfs here: {r.stderr.strip()}')
        made.append(d)
        return d
    yield mount
    for d in made: subprocess.run(['umount', str(d)], check=True)


def test_a_new_fixed_folder_made_meanwhile_by_another_run_is_refused(tmp_path):
    """A fixed `trainer.output_dir` missing when `train` starts is claimed by an atomic `mkdir` once the data is read:
    if another run made it meanwhile (and may have finished, its lock released) this one stops in one line and writes
    nothing there. The other run is played deterministically: right after this run's start checks, the folder appears
    holding a finished run's metrics row (two real processes would hit this window only by chance)."""
    code = textwrap.dedent("""
        import sys, omni_gspo.trainer as t
        checks = t.start_checks
        def other_run_meanwhile(cfg, out, *a, **k):   # the start checks in train (locked=True), not config's
            r = checks(cfg, out, *a, **k)
            if k.get('locked'): out.mkdir(); (out/'metrics.jsonl').write_text('{"other": 1}' + chr(10))
            return r
        t.start_checks = other_run_meanwhile
        from omni_gspo.launch import main; sys.exit(main(sys.argv[1:]))""")
    r = subprocess.run([sys.executable, '-c', code, 'train', *SMALL, 'trainer.max_steps=1', 'trainer.output_dir=run'],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    run = tmp_path/'run'
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f'omni-gspo: error: run folder {run} was made by another run after this one found it missing: one run writes '
        'a run folder; choose another trainer.output_dir, or set trainer.resume=auto to continue that run'], r.stderr
    assert sorted(p.name for p in run.iterdir()) == ['metrics.jsonl'], list(run.iterdir())
    assert (run/'metrics.jsonl').read_text() == '{"other": 1}\n'


def test_full_disk_during_a_checkpoint_is_one_named_error(tmpfs):
    "A checkpoint that does not fit: one error naming its folder and the bytes needed; no half-written folder stays."
    from omni_gspo.checkpoint import list_checkpoints, save_checkpoint
    from omni_gspo.files import RunFolderError
    out = tmpfs(1024)
    lin = torch.nn.Linear(512, 512)                       # 1 MiB of weights, 3 MiB with Adam's moments
    adam = torch.optim.AdamW(lin.parameters())
    lin(torch.ones(1, 512)).sum().backward(); adam.step()
    with pytest.raises(RunFolderError) as e: save_checkpoint(out, 1, lin, adam)
    assert str(e.value).startswith(f"out of space writing {out/'checkpoints'/'step_1'}: it needs at least 3.0 MiB, ")
    assert list_checkpoints(out) == [] and list((out/'checkpoints').iterdir()) == []


def test_full_disk_while_logging_a_row_leaves_whole_rows(tmpfs):
    "Rows appended until the disk is full: the failing append is a named error, and the file holds only whole rows."
    from omni_gspo.files import RunFolderError
    from omni_gspo.loggers import JsonlLogger
    out = tmpfs(64)
    log = JsonlLogger(out)
    with pytest.raises(RunFolderError) as e:
        for s in range(1, 1000): log.log({f'm/{k}': 0.125 for k in range(300)}, s)
    assert str(e.value).startswith(f"out of space writing {out/'metrics.jsonl'}: it needs at least"), e.value
    text = (out/'metrics.jsonl').read_text()
    assert text.endswith('\n')
    assert [json.loads(l)['training/global_step'] for l in text.splitlines()] == list(range(1, s))


def test_resume_on_changed_data_is_refused_unless_allowed(tmp_path):
    "The training parquet replaced by other valid rows after step 1: refused, naming the file; allowed, said."
    from omni_gspo.tasks.gsm8k import convert_gsm8k, write_gsm8k_source
    def data(seed):
        for split in ('train', 'test'): write_gsm8k_source(tmp_path/'src'/f'{split}.jsonl', 16, seed)
        convert_gsm8k(tmp_path/'src', tmp_path/'data')
    data(0)
    args = [*SMALL, 'data.train_file=data/train.parquet', 'trainer.output_dir=run']
    r = cli(*args, 'trainer.max_steps=1', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    data(1)
    r = cli(*args, 'trainer.max_steps=2', 'trainer.resume=auto', cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert 'the data changed since the run recorded it (data/train.parquet: ' in r.stderr, r.stderr
    assert steps(tmp_path/'run') == [1]
    r = cli(*args, 'trainer.max_steps=2', 'trainer.resume=auto', 'trainer.resume_changes=allow', cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'continuing on changed data (trainer.resume_changes=allow): data/train.parquet: ' in r.stdout
    assert steps(tmp_path/'run') == [1, 2]
