#!/usr/bin/env bash
# Here, from the repo root: fill .gpu/omni, the folder bench/gpu_rollout/omni.py carries to the H200 (Python 3.12, no
# network there): vLLM-Omni 0.26.0 and what it and omni_gspo import that neither the machine's image nor vLLM's wheel
# set (vllm 0.26.0 and the dependencies its CUDA 13 wheel pins, installed first) has, install_omni.sh, and the Qwen
# tokenizer's ranks (qwen.tiktoken).
# vLLM-Omni's other requirements (av, cache-dit, openai-whisper, torchsde, x-transformers, gguf, fa3-fwd,
# pydantic-settings, imageio-ffmpeg, ...) are imported only by its diffusion, TTS and serving code, not on the thinker's
# path; loguru is imported on it (vllm_omni/transformers_utils/configs/mammoth_moda2.py) although vLLM-Omni does not
# declare it.
set -euo pipefail
d=.gpu/omni; mkdir -p $d/cache/qwen-tiktoken
grep -qx '/.gpu/' .git/info/exclude || echo '/.gpu/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d $d \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  vllm-omni==0.26.0 aenum==3.1.16 diffusers==0.38.0 janus==2.0.0 omegaconf==2.4.0 prettytable==3.18.0 wcwidth==0.9.4 \
  loguru==0.7.3 fastcore==1.14.5 soundfile==0.14.0 cffi==2.1.1 pycparser==3.12 soxr==1.1.0 math-verify==0.9.0 \
  latex2sympy2_extended==1.11.0 antlr4-python3-runtime==4.13.2
cp bench/gpu_rollout/install_omni.sh $d/
.venv/bin/python -c "import shutil; from omni_gspo.tokenizer import qwen_tiktoken_file; \
shutil.copy(qwen_tiktoken_file(), '$d/cache/qwen-tiktoken/')"
du -sh $d
