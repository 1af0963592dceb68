set -u   # bench/memory_planner: command 6 of README.md (48 layers, built-in engine) in one device call (carry .whl .gpu/tok .gpu/pm)
export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} OMNI_GSPO_CACHE=/tmp/og_cache TOKENIZERS_PARALLELISM=false
mkdir -p $OMNI_GSPO_CACHE && cp -r .gpu/tok/* $OMNI_GSPO_CACHE/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl .gpu/pm/*.whl 2>&1 | grep -v "Target directory"
t=$SECONDS; python3 bench/front_door/checkpoint.py --layers 48 --out /dev/shm/thinker48 > $OUT/checkpoint48.log 2>&1; echo "checkpoint $((SECONDS - t)) s"
C="model.dtype=bfloat16 model.lora_rank=32 model.lora_alpha=64 actor.fsdp=true actor.activation_checkpointing=true actor.compile=false data.train_batch_size=4 actor.ppo_mini_batch_size=4 rollout.n=8 data.max_prompt_length=320 rollout.response_length=128 reward.custom_function=ascii_fraction actor.ppo_max_token_len_per_gpu=8192"
timeout ${T:-420} python3 bench/memory_planner/measure.py --recipe avqa --layers 48 --name 48L-hf-8k -- $C > $OUT/48L-hf-8k.log 2>&1
python3 -c "import json; d=json.load(open('$OUT/memory_planner_48L-hf-8k.json')); print(d['name'], d['ok'], d['error'], d['measured'], d['predicted'], d['error_pct'], d['seconds'])"
