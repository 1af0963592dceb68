#!/usr/bin/env bash
# The AVQA GPU-LoRA preset through the front door on one H200, in legs of at most 10 minutes (see README.md).
#   bash bench/front_door/run.sh setup|train|resume|long|notebook      (on the GPU machine, from the repo root;
#                                                                  results in $OUT)
# setup needs the carried wheels (.whl/: fastcore, papermill, soundfile, ... the image lacks) and vLLM 0.26.0 installed
# before, its environment in /tmp/vllm/env.sh; each leg after it needs the machine still warm (/tmp and /dev/shm kept).
set -euo pipefail
leg=${1:?leg}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source /tmp/vllm/env.sh
# /tmp/pkg: the package as it was when the GPU calls began (setup copies the carried .gpu/pkg there)
export PYTHONPATH=/tmp/pkg:/tmp/site:$PWD:$PYTHONPATH OMNI_GSPO_CACHE=/tmp/og_cache TOKENIZERS_PARALLELISM=false \
  PATH=/tmp/bin:$PATH
LAYERS=${LAYERS:-8}; CKPT=/dev/shm/thinker$LAYERS; RUN=/tmp/fd_run
# The preset (4 x 80 GB) scaled to one GPU: 32 prompts x 16 samples x 512 tokens, TP 1; a reward with spread on random
# weights.
# 48 layers: the memory share `omni-gspo plan` suggests beside the resident 59 GiB actor (vLLM queues what its KV cache
# cannot hold).
FIT=(data.train_batch_size=32 actor.ppo_mini_batch_size=32 rollout.n=16); SPLIT=()
if [ "$LAYERS" = 48 ]; then   # one 141 GB card holds the actor beside vLLM: the preset's offloads are for 4 x 80 GB
  FIT+=(rollout.vllm.gpu_memory_utilization=0.55 actor.param_offload=false actor.optimizer_offload=false)
  SPLIT=(--disk /tmp/ck48 --disk-shards 7)
elif [ "$LAYERS" = 24 ]; then   # half the text layers on one 80 GB H100 (when no H200 is lent): 30 GiB of weights
  FIT+=(rollout.vllm.gpu_memory_utilization=0.5 actor.param_offload=false actor.optimizer_offload=false)
fi
RESP=512
if [ "$leg" = long ]; then   # the seed's lengths: 4,096-token responses (4,096-token prompt budget), 4 prompts x 8
  FIT=(data.train_batch_size=4 actor.ppo_mini_batch_size=4 rollout.n=8 "${FIT[@]:3}"); RESP=4096
fi
SCALE=(hardware.gpus_per_node=1 rollout.tensor_parallel_size=1 "${FIT[@]}" rollout.response_length=$RESP
       reward.custom_function=ascii_fraction trainer.test_freq=0 logging.loggers=console logging.plot=false)
ARGS=(recipe=avqa preset=gpu-lora model.path=$CKPT "${SCALE[@]}" logging.progress_bar=false)
if [ -d .gpu/pkg ]; then rm -rf /tmp/pkg && cp -r .gpu/pkg /tmp/pkg; fi   # when carried
trap 'echo "leg $leg: ${SECONDS} s, exit $?" >> "$OUT/legs.txt"; du -sh $OMNI_GSPO_CACHE/compile/* \
  > "$OUT/compile_cache_$leg.txt" 2>&1 || true' EXIT
case $leg in
setup)   # carrying .whl and .gpu/tok (the offline Qwen tokenizer, built where the package index is reachable)
  mkdir -p $OMNI_GSPO_CACHE && cp -r .gpu/tok/* $OMNI_GSPO_CACHE/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>&1 \
    | grep -v "Target directory" || true
  mkdir -p /tmp/bin
  printf '#!/bin/sh\nexec python3 -c "import sys; from omni_gspo.launch import main; sys.exit(main())" "$@"\n' \
    > /tmp/bin/omni-gspo
  chmod +x /tmp/bin/omni-gspo
  [ -f $CKPT/config.json ] || python3 bench/front_door/checkpoint.py --layers $LAYERS --out $CKPT "${SPLIT[@]}" \
    | tee "$OUT/checkpoint.json"
  omni-gspo plan "${ARGS[@]}" | tee "$OUT/plan.txt" ;;
train)
  omni-gspo train "${ARGS[@]}" trainer.max_steps=3 trainer.save_freq=${SAVE_FREQ:-3} trainer.output_dir=$RUN 2>&1 \
    | tee "$OUT/train.log"
  cp $RUN/metrics.jsonl "$OUT/metrics_train.jsonl" ;;
resume)
  omni-gspo train "${ARGS[@]}" trainer.max_steps=4 trainer.save_freq=3 trainer.output_dir=$RUN trainer.resume=auto \
    2>&1 | tee "$OUT/resume.log"
  cp $RUN/metrics.jsonl "$OUT/metrics_resume.jsonl" ;;
long)      # 2 steps in a fresh process (warm compile cache from the train legs), the plan printed first
  omni-gspo plan "${ARGS[@]}" | tee "$OUT/plan_long.txt"
  omni-gspo train "${ARGS[@]}" trainer.max_steps=2 trainer.save_freq=0 trainer.output_dir=/tmp/fd_long 2>&1 \
    | tee "$OUT/long.log"
  cp /tmp/fd_long/metrics.jsonl "$OUT/metrics_long.jsonl" ;;
notebook)   # NB_RESUME=1: go on from the train leg's run folder (trainer.resume=auto) to step NB_STEPS
  ov=$(for kv in "${FIT[@]}" rollout.response_length=512 hardware.gpus_per_node=1 rollout.tensor_parallel_size=1 \
         trainer.test_freq=0 logging.progress_bar=false; do printf '"%s": %s, ' "${kv%%=*}" "${kv#*=}"; done)
  ov="$ov \"logging.loggers\": [console], \"logging.plot\": false, \"reward.custom_function\": ascii_fraction"
  NB_RUN=/tmp/fd_nb; [ "${NB_RESUME:-0}" = 1 ] && NB_RUN=$RUN
  ov="$ov, \"trainer.output_dir\": $NB_RUN"
  [ "${NB_RESUME:-0}" = 1 ] && ov="$ov, \"trainer.resume\": auto, \"trainer.save_freq\": 3"
  python3 -m papermill nbs/train_avqa.ipynb "$OUT/train_avqa_gpu.ipynb" -p hardware gpu -p preset gpu-lora \
    -p model_path $CKPT -p max_steps ${NB_STEPS:-2} -y "overrides: {${ov}}" 2>&1 | tee "$OUT/notebook.log" | tail -20
  cp $NB_RUN/metrics.jsonl "$OUT/metrics_notebook.jsonl" ;;
esac
