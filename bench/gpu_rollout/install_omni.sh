#!/usr/bin/env bash
# On the H200 machine, from the repo root, carrying .gpu/omni (made here by bench/gpu_rollout/fetch_omni.sh), after
# vLLM 0.26.0:
#   source /tmp/vllm/env.sh && bash .gpu/omni/install_omni.sh
# Installs vLLM-Omni 0.26.0 and the wheels it and omni_gspo import that the image and vLLM's wheel set lack into
# /tmp/omni, puts the Qwen tokenizer's ranks into /tmp/omni_cache (OMNI_GSPO_CACHE), and checks the imports with
# /tmp/omni first on the path.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target /tmp/omni \
  "$src"/*.whl 2>&1 | grep -v "Target directory" || true
mkdir -p /tmp/omni_cache && cp -r "$src"/cache/. /tmp/omni_cache/
PYTHONPATH=/tmp/omni:$PWD:${PYTHONPATH:-} python3 -c "
import vllm, vllm_omni
from vllm_omni.entrypoints.omni import Omni
import vllm_omni.model_executor.models.qwen3_omni.qwen3_omni_moe_thinker, vllm_omni.worker.gpu_ar_worker, \
vllm_omni.engine.stage_engine_core_proc
import omni_gspo.vllm_engine, omni_gspo.workers, omni_gspo.splits
print('vllm', vllm.__version__, 'vllm_omni', vllm_omni.__version__, 'ready')"
