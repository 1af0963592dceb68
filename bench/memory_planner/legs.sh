# bench/memory_planner, one device call (carry .whl .gpu/tok .gpu/pm):
#   bash bench/memory_planner/legs.sh 8    commands 1, 2 and 7 of README.md (8-layer slice, built-in engine)
#   bash bench/memory_planner/legs.sh 48   command 6 (48 layers, built-in engine; writes the 59 GiB checkpoint first)
set -u
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} OMNI_GSPO_CACHE=/tmp/og_cache TOKENIZERS_PARALLELISM=false
mkdir -p $OMNI_GSPO_CACHE && cp -r .gpu/tok/* $OMNI_GSPO_CACHE/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl .gpu/pm/*.whl \
  2>&1 | grep -v "Target directory"
L=${1:?layers: 8 or 48}
C="model.dtype=bfloat16 model.lora_rank=32 model.lora_alpha=64 actor.fsdp=true actor.activation_checkpointing=true \
actor.compile=false data.train_batch_size=4 actor.ppo_mini_batch_size=4 rollout.n=8 data.max_prompt_length=320 \
reward.custom_function=ascii_fraction"
m() {
  n=$1; shift
  timeout ${T:-250} python3 bench/memory_planner/measure.py --recipe avqa --layers $L --name $n -- $C "$@" \
    > $OUT/$n.log 2>&1
  python3 -c "import json,sys; d=json.load(open('$OUT/memory_planner_$n.json')); \
print(d['name'], d['ok'], d['error'], d['measured'], d['predicted'], d['error_pct'], d['seconds'])"
}
if [ "$L" = 48 ]; then
  t=$SECONDS; python3 bench/front_door/checkpoint.py --layers 48 --out /dev/shm/thinker48 > $OUT/checkpoint48.log 2>&1
  echo "checkpoint $((SECONDS - t)) s"
  T=${T:-420} m 48L-hf-8k rollout.response_length=128 actor.ppo_max_token_len_per_gpu=8192
else
  m 8L-hf-16k rollout.response_length=256 actor.ppo_max_token_len_per_gpu=16384
  m 8L-hf-4k rollout.response_length=256 actor.ppo_max_token_len_per_gpu=4096
  T=280 m 8L-hf-offload-16k rollout.response_length=256 actor.fsdp_cpu_offload=true \
    actor.ppo_max_token_len_per_gpu=16384
fi
