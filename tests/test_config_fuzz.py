"""Random override sets over every config key, edge values included: each one builds, or is refused with a
`ConfigError` (issue 39, "Values no one means"), checked as `omni-gspo config` checks it (`launch.checked_config`:
the config, then the run folder it names). Seeded: a failure names its seed and its overrides, and replays."""
import random, typing
import pytest
import huggingface_hub.constants
import omni_gspo.tasks   # the recipes: each task registers its own
from omni_gspo.config import Config, ConfigError, build_config, leaf_keys, recipes
from omni_gspo.launch import checked_config
from omni_gspo.presets import PRESETS, preset_config

NUMBERS = ['0', '1', '-1', '2', '3', '8', '0.5', '-0.0', '1e-300', '2.5', '1e30', '-1e30', '1e400', '-1e400', 'inf',
           '-inf', 'nan', str(2**31), str(2**63), '-' + str(2**63), 'abc', '', 'true', 0, 1, -1, 7.0, float('inf'),
           float('nan'), 10**40, True]
TEXTS = ['', 'x', 'a/b', 'Qwen/Qwen3-Omni-30B-A3B-Instruct', '~nosuchuser/x', '~', 'x' * 300, 'd/' + 'y' * 256,
         'a\x00b', '\ud800', '/nonexistent', '/dev/null', '.', 'generated:avqa', 'generated:nosuch', 'tiny-omni',
         'tiny-qwen', 'off', 'auto', 'runs/{time}', 'score.py:f', '/no/such.py:score', 'ascii_fraction', 3, 1.5]
LISTS = ['', '[]', '[1, 2]', 'a,b', '[', '["q_proj"]', '[1e400]', '[-1]', 'console,wandb', 'console,mlflow', '[[1]]',
         '{"a": 1}', 5]
BOOLS = ['true', 'false', 'maybe', '1', '', 0, 2, None]


def values_for(key:str)->list:
    "Edge values for `key`: its choices (and one that is not), or values of its type and of other types."
    typ, f = leaf_keys()[key]
    if f.metadata.get('choices'): return [*f.metadata['choices'], 'bogus', '', 1]
    if typ is bool: return BOOLS
    if typ in (int, float): return NUMBERS
    if typing.get_origin(typ) is list: return LISTS
    return TEXTS


def random_overrides(r:random.Random)->dict:
    "One to six keys with edge values; now and then a key that does not exist."
    keys = r.sample(sorted(leaf_keys()), r.randint(1, 6))
    ov = {k: r.choice(values_for(k)) for k in keys}
    if r.random() < 0.1: ov[r.choice(['rollout.nn', 'lr', 'actor.optim', 'x.y.z'])] = '1'
    return ov


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    "A Hub id is looked up in the local cache only, whatever the environment says; relative paths are under tmp_path."
    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_OFFLINE', True)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize('seed', range(4))
def test_random_overrides_build_or_raise_config_error(seed):
    r, built, refused = random.Random(seed), 0, 0
    for i in range(100):
        ov, recipe = random_overrides(r), r.choice([None, *recipes()])
        presets = [p for p, rec in PRESETS if rec == (recipe or 'gsm8k')]
        preset = r.choice(['', *presets]) if r.random() < 0.3 else ''
        args = [*([f'recipe={recipe}'] if recipe else []), *([f'preset={preset}'] if preset else []),
                *(f'{k}={v}' for k, v in ov.items())]   # as typed after `omni-gspo config`
        try:   # text values as `omni-gspo config` gets them; other Python values as a notebook passes them
            if all(isinstance(v, str) for v in ov.values()): cfg = checked_config(args)
            else: cfg = preset_config(recipe, preset, ov) if preset else build_config(recipe, ov)
        except ConfigError: refused += 1; continue
        except Exception as e:
            raise AssertionError(f"seed {seed}, set {i}: recipe={recipe} preset={preset!r} overrides={ov!r}: "
                                 f"{type(e).__name__}: {e}") from e
        assert isinstance(cfg, Config); built += 1
    assert built and refused, (built, refused)   # the sets reach both outcomes


def test_every_key_edge_value_alone():
    ("Each edge value of each key, alone on the defaults: built or a `ConfigError` that names the key (text values "
     "through `checked_config`, as `omni-gspo config KEY=VALUE` checks them).")
    for key in leaf_keys():
        for v in values_for(key):
            try: checked_config([f'{key}={v}']) if isinstance(v, str) else build_config(overrides={key: v})
            except ConfigError as e:
                assert key in str(e) or 'problems in the config' in str(e), (key, v, str(e))
