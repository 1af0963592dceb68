"""Fail when a committed notebook under nbs/ is too large or carries outputs.

usage: python tools/check_nb_size.py [--max-kb 200] [NOTEBOOK ...]
Without paths it checks the notebooks git tracks under nbs/. Notebooks are sources: the library notebooks'
examples run as tests, the recipes and tutorials run through nbdev and papermill, so none is committed with
outputs (they go stale and grow the repository), and none grows past the limit (embedded images or data).
Prints one line per problem; exits 1 if there is any.
"""
import argparse, json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tracked_notebooks() -> list[Path]:
    "Notebooks under nbs/ that git tracks (the pathspec's `*` also matches sub-folders)."
    out = subprocess.run(['git', 'ls-files', '-z', '--', 'nbs/*.ipynb'], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [ROOT/p for p in out.split('\0') if p]


def problems(path: Path, max_kb: float) -> list[str]:
    "What is wrong with one notebook, one message each."
    size = path.stat().st_size
    out = [f'{path}: {size / 1000:.0f} kB, over the {max_kb:g} kB limit'] if size > max_kb * 1000 else []
    try: cells = json.loads(path.read_text(encoding='utf-8'))['cells']
    except (ValueError, KeyError) as e: return out + [f'{path}: not a notebook ({e})']
    with_out = [i for i, c in enumerate(cells) if c.get('outputs')]
    if with_out:
        out.append(f'{path}: cell(s) {with_out[:10]} carry outputs; clear them (jupyter nbconvert --clear-output '
                   f'--inplace {path.name})')
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('paths', nargs='*', type=Path)
    p.add_argument('--max-kb', type=float, default=200)
    a = p.parse_args(argv)
    paths = a.paths or tracked_notebooks()
    msgs = [m for f in paths for m in problems(f, a.max_kb)]
    for m in msgs: print(m)
    print(f'{len(paths)} notebooks checked, {len(msgs)} problem(s)')
    return 1 if msgs or not paths else 0


if __name__ == '__main__': sys.exit(main())
