#!/usr/bin/env bash
# The learning proof on the H200 machine, in calls made back to back while it stays warm (its /tmp is lost after
# about 30 s idle). Every call carries bench/learning/.gpu/snap (the package and recipe notebook at the commit used)
# and one of bench/learning/.gpu/p1 .. p9 (the GGUF in 9 byte slices, the wheels the machine lacks in p1):
#   bash bench/learning/gpu.sh piece K         K = 1..8: keep slice K under /tmp/learn (K = 1 also installs the wheels)
#   bash bench/learning/gpu.sh setup           slice 9, join + sha256 + convert to bf16, greedy eval of the base model
#   bash bench/learning/gpu.sh train SECONDS   a training leg through the CLI, resumed from the newest checkpoint,
#                                              ending by itself (trainer.max_minutes) within SECONDS; a checkpoint
#                                              every 5 steps and at its end
#   bash bench/learning/gpu.sh final SECONDS   the last leg through papermill (the recipe notebook), ending by itself
#                                              (trainer.max_minutes) in time for the greedy eval of the trained policy
# Each step first checks that what the earlier calls left in /tmp is there (exit 3 if the machine was lost).
set -euo pipefail
R=$PWD; L=${LEARN_DIR:-/tmp/learn}; G=$R/bench/learning/.gpu; D=${DATA_DIR:-$R/bench/learning/data}; OUT=${OUT:-$L/out}
HW=${HW:-gpu}   # HW=cpu, DATA_DIR and EXTRA (more key=value overrides) make a small local rehearsal
RUN=$L/run; MODEL=$L/qwen05
export PYTHONPATH=$G/snap PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $L/pieces $OUT
cd $L   # not the repo root: python would import the working tree's omni_gspo/ from there, not the snapshot's

# the run's settings, beside the recipe notebook's named parameters (hardware, model_path, train_file, val_file,
# max_steps)
OV=(model.dtype=bfloat16 model.lora_rank=32 model.lora_alpha=64
    model.target_modules=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
    actor.optim.lr=1e-4 data.train_batch_size=64 actor.ppo_mini_batch_size=64 actor.ppo_max_token_len_per_gpu=32768
    data.max_prompt_length=256 data.val_batch_size=512 algorithm.drop_zero_std_groups=true
    rollout.engine=hf rollout.n=8 rollout.temperature=1.0 rollout.response_length=400 rollout.min_probs_pearson=0.99
    reward.custom_function=$R/bench/learning/reward.py:compute_score
    trainer.test_freq=10 trainer.save_freq=5 trainer.resume=auto trainer.output_dir=$RUN
    logging.progress_bar=false logging.plot=false logging.print_samples=1 ${EXTRA:-})
EVAL=(--model $MODEL --data heldout=$D/heldout.parquet gsm8k100=$D/gsm8k100.parquet --max-new-tokens ${EVAL_TOKENS:-512}
      --device $HW)

need(){ [[ -e $1 ]] || { echo "MACHINE LOST: $1 is missing (a fresh machine?): start again from piece 1"; exit 3; }; }
npieces(){ ls $L/pieces | wc -l; }
last_step(){ { ls -d $RUN/checkpoints/step_* 2>/dev/null || true; } | sed 's/.*step_//' | sort -n | tail -1; }
keep(){ cp $RUN/metrics.jsonl $OUT/ 2>/dev/null || true; }

case $1 in
piece)
  k=$2; have=$(npieces); echo "slices already here: $have"
  [[ $have == $((k - 1)) ]] || { echo "MACHINE LOST: expected $((k - 1)) slices before slice $k"; exit 3; }
  cp $G/p$k/piece.* $L/pieces/
  if [[ -d $G/p$k/wheels ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check $G/p$k/wheels/*.whl 2>&1 \
      | grep -v "^WARNING: Running pip as" || true
    python3 -c "import papermill, ipykernel, plotly, math_verify, gguf, soundfile, soxr, ipywidgets, fastcore; \
import omni_gspo.trainer; print('imports ok')"
  fi
  nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader; echo "slices now: $(npieces)";;
setup)
  have=$(npieces); [[ $have == 8 ]] || { echo "MACHINE LOST: expected 8 slices, found $have"; exit 3; }
  cp $G/p9/piece.* $L/pieces/
  python3 $R/bench/learning/convert_gguf.py --parts $L/pieces --gguf $L/qwen05.gguf --out $MODEL 2>&1 \
    | grep -v "it/s\]" || true
  need $MODEL/model.safetensors
  python3 $R/bench/learning/evaluate.py "${EVAL[@]}" --out $OUT/eval_before.json 2>&1 \
    | grep -v -i "warn\|timeout is disabled\|the logic for timeout";;
train)
  need $MODEL/config.json
  secs=$2; s0=$(last_step); t0=$(date +%s); mins=$(awk -v s=$secs -v m=${LEG_MARGIN:-120} 'BEGIN {print (s - m) / 60}')
  echo "leg from checkpoint ${s0:-none}, for $secs s (trainer.max_minutes=$mins)"
  timeout -s INT -k 30 $secs python3 -c "import sys, omni_gspo; print('omni_gspo from', omni_gspo.__file__); \
from omni_gspo.launch import main; sys.exit(main(sys.argv[1:]))" train \
    hardware.device=$HW model.path=$MODEL data.train_file=$D/train.parquet data.val_file=$D/heldout.parquet \
    trainer.max_steps=400 trainer.max_minutes=$mins "${OV[@]}" 2>&1 \
    | grep --line-buffered -v "^\s*warnings.warn\|UserWarning\|Timeout is disabled\|the logic for timeout" \
    | tee -a $OUT/train.log || true
  s1=$(last_step); echo "$(( ${s1:-0} - ${s0:-0} )) $(( $(date +%s) - t0 ))" >> $L/pace
  echo "leg done: checkpoint $s1; pace (steps seconds): $(cat $L/pace | tr '\n' ' ')"
  keep;;
final)
  need $MODEL/config.json; s0=$(last_step); need $RUN/checkpoints/step_$s0
  # the leg ends by itself (trainer.max_minutes) leaving ~200 s for papermill's start, the last step, and the eval after
  mins=$(awk -v s=$2 -v m=${FINAL_MARGIN:-200} 'BEGIN {print (s - m) / 60}')
  echo "final leg from step $((s0 + 1)), trainer.max_minutes=$mins"
  yaml=$(python3 -c "import sys; ov=sys.argv[1:]; \
print('overrides: {' + ', '.join(repr(k)+': '+repr(v) for k, v in (o.split('=', 1) for o in ov)) + '}')" \
    "${OV[@]}" trainer.max_minutes=$mins)
  papermill $G/snap/nbs/train_gsm8k.ipynb $OUT/train_gsm8k.ipynb -k python3 --cwd $L --log-output -p hardware $HW \
    -p model_path $MODEL -p train_file $D/train.parquet -p val_file $D/heldout.parquet -p max_steps 400 -y "$yaml" \
    2>&1 | grep -v "warnings.warn\|UserWarning\|Timeout is disabled\|the logic for timeout" | tail -40 || true
  keep; s1=$(last_step)
  python3 $R/bench/learning/evaluate.py "${EVAL[@]}" --adapter $RUN/checkpoints/step_$s1 --out $OUT/eval_after.json \
    2>&1 | grep -v -i "warn\|timeout is disabled\|the logic for timeout"
  cp $RUN/metrics.html $RUN/config.json $OUT/ 2>/dev/null || true;;
*) echo "unknown step $1"; exit 2;;
esac
