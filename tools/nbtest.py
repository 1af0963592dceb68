"""Run every notebook's tests (nbdev's own runner, tst_flags and .notest rules) and print a summary line.

usage: python tools/nbtest.py [PATH] [--flags "slow gpu"] [--n_workers 2]
Ends with 'N passed, N failed, N skipped'; exits 1 if any notebook failed or none ran.
"""
import argparse, sys, time
from fastcore.parallel import parallel
from nbdev.config import get_config
from nbdev.doclinks import nbglob
from nbdev.frontmatter import FrontmatterProc
from nbdev.process import NBProcessor
from nbdev.test import _keep_file, test_nb


# Started first, longest first (measured with 2 workers on 2 cores: 06a_vllm 107 s, 09_trainer 76 s, 06_rollout 47 s,
# 07_actor and 07b_fsdp 30 s; the other 33 take 1-23 s): in alphabetical order 09_trainer starts near the end and one
# worker finishes alone (simulated on those times: 241 s in alphabetical order, 225 s longest first, 225 s the ideal).
LONGEST_FIRST = ('06a_vllm', '09_trainer', '06_rollout', '07_actor', '07b_fsdp')


def frontmatter(fn):
    return getattr(NBProcessor(fn, procs=FrontmatterProc, process=True).nb, 'frontmatter_', {})


def main():
    p = argparse.ArgumentParser()
    p.add_argument('path', nargs='?')
    p.add_argument('--flags', default='')
    p.add_argument('--n_workers', type=int, default=2)
    a = p.parse_args()
    cfg = get_config()
    skip = cfg.tst_flags.split() if isinstance(cfg.tst_flags, str) else list(cfg.tst_flags)
    files = [f.absolute() for f in sorted(nbglob(a.path, as_path=True)) if _keep_file(f, '.notest')]
    skipped = [f for f in files if str(frontmatter(f).get('skip_exec', '')).lower() == 'true']
    todo = sorted((f for f in files if f not in skipped),
                  key=lambda f: LONGEST_FIRST.index(f.stem) if f.stem in LONGEST_FIRST else len(LONGEST_FIRST))
    t0 = time.time()
    out = parallel(test_nb, todo, skip_flags=skip, force_flags=a.flags.split(), basepath=cfg.config_path,
                   n_workers=a.n_workers, pause=0.01) if todo else []
    res = [(f, ok, s) for f, (ok, s) in zip(todo, out)]
    for f, ok, s in sorted(res): print(f"{'PASS' if ok else 'FAIL'} {f.relative_to(cfg.config_path)} ({s:.1f}s)")
    for f in skipped: print(f"SKIP {f.relative_to(cfg.config_path)} (skip_exec: run by tests/ through papermill)")
    npass = sum(ok for _, ok, _ in res)
    print(f"{len(files)} notebooks in {time.time() - t0:.1f}s")
    print(f"{npass} passed, {len(res) - npass} failed, {len(skipped)} skipped")
    sys.exit(1 if len(res) - npass or not res else 0)


if __name__ == '__main__': main()
