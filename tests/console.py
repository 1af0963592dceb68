"""`omni-gspo ARGS` without a new process: the console script's `main` run in the test's own process.

A subprocess of the console script pays `import torch` (about 3 s of CPU) before it parses a single argument; the
checks of what `config`, `plan`, `--help` and a refused `train` print need only `main`. `tests/test_entrypoints.py`
(`test_console_script_is_main`) runs the installed script as a subprocess on a help, an error and a config command
and requires the same exit status, stdout and stderr as `main` here, so what these checks prove holds for the script."""
import contextlib, io, os, subprocess, sys
from pathlib import Path
from omni_gspo.launch import main

SCRIPT = str(Path(sys.executable).with_name('omni-gspo'))


def run_main(*args:str, cwd=None)->subprocess.CompletedProcess:
    "`main(args)` in `cwd`, as `subprocess.run([SCRIPT, *args], capture_output=True, text=True)` reports it."
    out, err, env = io.StringIO(), io.StringIO(), dict(os.environ)
    try:
        with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:   # `ready_platform` sets the device's defaults in the environment: leave it as it was
        os.environ.clear(); os.environ.update(env)
    return subprocess.CompletedProcess([SCRIPT, *args], code, out.getvalue(), err.getvalue())


def run_script(*args:str, cwd=None, timeout:float=900)->subprocess.CompletedProcess:
    "The installed `omni-gspo` console script in a subprocess, as a user runs it."
    return subprocess.run([SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
