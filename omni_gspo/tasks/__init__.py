"""One module per task: its generator, its converter (a command) and its reward; `common` holds what they share.

Importing this package imports the built-in task modules (`common.BUILTIN_TASKS`): each registers its `Task`, and so
its recipe with `omni_gspo.config` (02b_tasks). Written by hand: no notebook exports this file."""
import importlib
from .common import BUILTIN_TASKS

for _name in BUILTIN_TASKS: importlib.import_module(f'{__name__}.{_name}')
