"""What a pip user gets (issue 40, "What a user coming from verl-omni meets first"): the wheel built from this tree
as a release is built (`python -m build`: the sdist first, so MANIFEST.in decides what the wheel gets) carries
the recipe notebooks and the LICENSE, and `omni-gspo notebooks DEST` copies them out of the installed package.
Also: the package's imports go one way (no module imports one that imports it back, issue 39)."""
import ast, shutil, subprocess, sys, sysconfig, tarfile, zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def source_tree(dest:Path)->Path:
    "What the build reads (setup.py, settings.ini, MANIFEST.in, README, LICENSE, the package, the recipe notebooks)."
    for f in ('setup.py', 'settings.ini', 'MANIFEST.in', 'README.md', 'LICENSE'): shutil.copy(ROOT/f, dest/f)
    shutil.copytree(ROOT/'omni_gspo', dest/'omni_gspo', ignore=shutil.ignore_patterns('__pycache__', 'notebooks'))
    (dest/'nbs').mkdir()
    for nb in (ROOT/'nbs').glob('train_*.ipynb'): shutil.copy(nb, dest/'nbs'/nb.name)
    return dest


def test_wheel_ships_the_recipe_notebooks_and_the_command_copies_them(tmp_path):
    (tmp_path/'src').mkdir(); src = source_tree(tmp_path/'src')
    # as a release is built: the sdist first (what MANIFEST.in lets through), then the wheel from the sdist alone
    r = subprocess.run([sys.executable, '-m', 'build', '--no-isolation', '-o', str(tmp_path/'dist'), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    sdist, = (tmp_path/'dist').glob('omni_gspo-*.tar.gz')
    in_sdist = {n.partition('/')[2] for n in tarfile.open(sdist).getnames()}
    assert {'LICENSE', *(f'nbs/{p.name}' for p in (ROOT/'nbs').glob('train_*.ipynb'))} <= in_sdist, sorted(in_sdist)
    wheel, = (tmp_path/'dist').glob('omni_gspo-*.whl')
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.rpartition('/')[2] for n in names if n.startswith('omni_gspo/notebooks/'))
    assert shipped == sorted(p.name for p in (ROOT/'nbs').glob('train_*.ipynb')) and shipped, names
    assert any(n.endswith('.dist-info/licenses/LICENSE') or n.endswith('.dist-info/LICENSE') for n in names), names
    # a fresh venv, this environment's packages visible to it (dependencies: seconds, not a download), the wheel in it
    venv = tmp_path/'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--system-site-packages', '--without-pip', str(venv)], check=True)
    py = venv/'bin'/'python'
    site = subprocess.run([str(py), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                          capture_output=True, text=True, check=True).stdout.strip()
    # this environment's site-packages as a plain path: its .pth files (this checkout's editable install) stay off
    Path(site, 'deps.pth').write_text(sysconfig.get_paths()['purelib'] + '\n')
    r = subprocess.run([sys.executable, '-m', 'pip', '--python', str(py), 'install', '--no-deps', '-q', str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    where = subprocess.run([str(py), '-c', 'import omni_gspo; print(omni_gspo.__file__)'], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(venv)), where                            # the installed wheel, not this checkout
    r = subprocess.run([str(venv/'bin'/'omni-gspo'), 'notebooks', 'mine'], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    copied = sorted(p.name for p in (tmp_path/'mine').iterdir())
    assert copied == shipped and 'papermill' in r.stdout, (copied, r.stdout)
    assert (tmp_path/'mine'/'train_gsm8k.ipynb').read_bytes() == (ROOT/'nbs'/'train_gsm8k.ipynb').read_bytes()


def test_manifest_names_only_files_that_exist():
    for line in (ROOT/'MANIFEST.in').read_text().splitlines():
        kind, *patterns = line.split()
        assert kind == 'include' and all(list(ROOT.glob(p)) for p in patterns), line
    assert 'Apache License' in (ROOT/'LICENSE').read_text() and 'license = apache2' in (ROOT/'settings.ini').read_text()


def package_imports()->dict[str, set[str]]:
    "Each module of the package -> the package modules it imports anywhere in its file (top level or in a function)."
    out = {}
    for f in sorted((ROOT/'omni_gspo').rglob('*.py')):
        if f.name == '_modidx.py': continue
        parts = f.relative_to(ROOT).with_suffix('').parts
        mod = '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)
        pkg = mod if f.name == '__init__.py' else mod.rpartition('.')[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ''
                if node.level:
                    up = pkg.split('.')[:len(pkg.split('.')) - node.level + 1]
                    base = '.'.join(up + ([node.module] if node.module else []))
                names = [f'{base}.{a.name}' for a in node.names] + [base]
            elif isinstance(node, ast.Import): names = [a.name for a in node.names]
            else: continue
            deps |= {n for n in names if n.startswith('omni_gspo')}
        out[mod] = deps
    return {m: {d for d in ds if d in out and d != m} for m, ds in out.items()}


def test_config_imports_no_task_and_the_imports_have_no_circle():
    graph = package_imports()
    assert not any(d.startswith('omni_gspo.tasks') for d in graph['omni_gspo.config']), graph['omni_gspo.config']
    assert graph['omni_gspo.files'] == set(), graph['omni_gspo.files']   # file safety: the ground floor
    for m in ('omni_gspo.data', 'omni_gspo.media'):   # they write files through `files`, not through `config`
        assert 'omni_gspo.config' not in graph[m] and 'omni_gspo.files' in graph[m], (m, graph[m])
    state = {}
    def visit(m, path):
        if state.get(m) == 'done': return
        assert state.get(m) != 'open', f"import circle: {' -> '.join(path + [m])}"
        state[m] = 'open'
        for d in sorted(graph[m]): visit(d, path + [m])
        state[m] = 'done'
    for m in graph: visit(m, [])


def test_config_alone_imports_nothing_of_the_tasks_and_registering_reaches_it():
    code = ("import sys, omni_gspo.config as c; assert c.recipes() == {}, c.recipes(); "
            "assert not [m for m in sys.modules if m.startswith('omni_gspo.tasks')]; "
            "import omni_gspo.tasks; print(','.join(c.recipes()))")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == 'gsm8k,mmk12,avqa', r.stderr[-2000:]
