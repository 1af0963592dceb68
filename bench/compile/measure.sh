#!/usr/bin/env bash
# Step 1 against step 2 with actor.compile on and off, through the front door on one H200 (see README.md).
#   bash bench/compile/measure.sh [measure.py options]      (on the GPU machine, from the repo root; results in $OUT)
# Needs the wheels the image lacks carried in .whl/ and the offline tokenizer in .gpu/tok (as bench/front_door/run.sh);
# no vLLM: the runs use the built-in engine.
set -euo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} OMNI_GSPO_CACHE=/tmp/og_cache TOKENIZERS_PARALLELISM=false
LAYERS=${LAYERS:-8}; CKPT=/dev/shm/thinker$LAYERS
mkdir -p $OMNI_GSPO_CACHE; [ -d .gpu/tok ] && cp -r .gpu/tok/* $OMNI_GSPO_CACHE/
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/*.whl 2>&1 | grep -v "Target directory" || true
[ -f $CKPT/config.json ] || python3 bench/front_door/checkpoint.py --layers $LAYERS --out $CKPT > "$OUT/checkpoint.json"
python3 bench/compile/measure.py --model $CKPT --runs /tmp/compile_runs "$@"      # writes $OUT/compile_<settings>.json
cp /tmp/compile_runs/*.log "$OUT/" 2>/dev/null || true
