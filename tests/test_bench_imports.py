"""The bench scripts need GPUs, so CI cannot run them; it checks instead that every name they import from `omni_gspo`
still exists. Each `bench/**/*.py` is parsed (not executed) and every `import omni_gspo.x` / `from omni_gspo.x import a`
anywhere in it, inside functions too, is resolved with importlib: a module, or an attribute or submodule of one."""
import ast, importlib, importlib.util
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT/'bench').rglob('*.py'))


def is_module(name:str)->bool:
    "Whether `name` is an importable module (False too when a parent is missing or is not a package)."
    try: return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError: return False


def missing_imports(path:Path)->list[str]:
    "What `path` imports from omni_gspo that does not exist, as 'line N: module.name' (empty: all resolve)."
    bad = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split('.')[0] == 'omni_gspo' and not is_module(a.name):
                    bad.append(f'line {node.lineno}: {a.name}')
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or '').split('.')[0] == 'omni_gspo':
            if not is_module(node.module):
                bad.append(f'line {node.lineno}: {node.module}'); continue
            mod = importlib.import_module(node.module)
            for a in node.names:
                if a.name != '*' and not hasattr(mod, a.name) and not is_module(f'{node.module}.{a.name}'):
                    bad.append(f'line {node.lineno}: {node.module}.{a.name}')
    return bad


def test_bench_scripts_are_found():
    assert len(SCRIPTS) >= 10 and any('from omni_gspo' in p.read_text() for p in SCRIPTS), SCRIPTS


@pytest.mark.parametrize('path', SCRIPTS, ids=lambda p: str(p.relative_to(ROOT/'bench')))
def test_bench_script_imports_exist(path):
    assert missing_imports(path) == [], f'{path.relative_to(ROOT)} imports names omni_gspo no longer has'


def test_checker_catches_renamed_names(tmp_path):
    "A script importing a renamed function, a missing module or a missing submodule is caught, inside a function too."
    s = tmp_path/'bench_x.py'
    s.write_text('import os\nfrom omni_gspo.config import build_config, build_konfig\n'
                 'def f():\n    from omni_gspo import config, no_such_module\n    import omni_gspo.no_such.mod\n'
                 'from omni_gspo.nowhere import x\n')
    assert sorted(missing_imports(s)) == ['line 2: omni_gspo.config.build_konfig', 'line 4: omni_gspo.no_such_module',
                                          'line 5: omni_gspo.no_such.mod', 'line 6: omni_gspo.nowhere']
    s.write_text('from omni_gspo.config import build_config\nimport omni_gspo.algos\n')
    assert missing_imports(s) == []
