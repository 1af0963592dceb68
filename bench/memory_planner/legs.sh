set -u   # bench/memory_planner: commands 1, 2 and 7 of README.md in one device call (carry .whl .gpu/tok .gpu/pm)
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} OMNI_GSPO_CACHE=/tmp/og_cache TOKENIZERS_PARALLELISM=false
mkdir -p $OMNI_GSPO_CACHE && cp -r .gpu/tok/* $OMNI_GSPO_CACHE/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl .gpu/pm/*.whl 2>&1 | grep -v "Target directory"
C="model.dtype=bfloat16 model.lora_rank=32 model.lora_alpha=64 actor.fsdp=true actor.activation_checkpointing=true actor.compile=false data.train_batch_size=4 actor.ppo_mini_batch_size=4 rollout.n=8 data.max_prompt_length=320 rollout.response_length=256 reward.custom_function=ascii_fraction"
m() { n=$1; shift; timeout ${T:-250} python3 bench/memory_planner/measure.py --recipe avqa --layers 8 --name $n -- $C "$@" > $OUT/$n.log 2>&1; python3 -c "import json,sys; d=json.load(open('$OUT/memory_planner_$n.json')); print(d['name'], d['ok'], d['error'], d['measured'], d['predicted'], d['error_pct'], d['seconds'])"; }
m 8L-hf-16k actor.ppo_max_token_len_per_gpu=16384
m 8L-hf-4k actor.ppo_max_token_len_per_gpu=4096
T=280 m 8L-hf-offload-16k actor.fsdp_cpu_offload=true actor.ppo_max_token_len_per_gpu=16384
