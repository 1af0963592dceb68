#!/usr/bin/env bash
# Issue 8, benchmark 3, in ONE GPU call: TRL 1.16's GRPOTrainer in GSPO mode (bench_trl.py) and our trainer (ours.py)
# with the same settings, one after the other in the same process tree, full-parameter then LoRA; both JSONs, the logs
# and result.json (ours / TRL end-to-end generated tokens per second) under $OUT. From the repository root, with
# bench/trl_side_by_side/.carry carried (prepare.sh fills it):
#   bash bench/trl_side_by_side/run_both.sh
# Every piece runs under `timeout`, clamped to what is left of BUDGET seconds (default 530: the call's limit is 600), so
# a hang costs one piece and the others' JSONs still come back. Knobs (environment): MODES ("full lora"), ENGINE
# (hf|vllm), OURS_STEPS / OURS_WARMUP (3 / 1: see ours.py), OURS_OVERRIDES (more key=value config overrides for
# ours.py), TRL_STEPS (10), TINY=1 (both scripts' --tiny, for a CPU rehearsal), PYSITE (a folder where the wheels are
# already installed: skip the install).
set -uo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd); H=$R/bench/trl_side_by_side; C=$H/.carry
OUT=${OUT:-/tmp/trl_side_by_side_out}; WORK=${WORK:-/tmp/trl_side_by_side}; BUDGET=${BUDGET:-530}; T0=$(date +%s)
MODES=${MODES:-full lora}; ENGINE=${ENGINE:-hf}; TRL_STEPS=${TRL_STEPS:-10}; TINY=${TINY:-}
OURS_STEPS=${OURS_STEPS:-3}; OURS_WARMUP=${OURS_WARMUP:-1}; OURS_OVERRIDES=${OURS_OVERRIDES:-}
# the GPU machine's rule: multicast off
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT" "$WORK"
[[ -f $C/bench_trl.py && -d $C/tokenizer ]] \
  || { echo "no $C/bench_trl.py or tokenizer/: run prepare.sh and carry bench/trl_side_by_side/.carry"; exit 2; }
if [[ -z ${PYSITE:-} ]]; then
  PYSITE=/tmp/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --disable-pip-version-check \
    --target $PYSITE "$C"/wheels/*.whl 2>&1 | grep -v "Running pip as" || true
fi
export PYTHONPATH=$PYSITE:$R${PYTHONPATH:+:$PYTHONPATH}   # keeps what env.sh put there (vLLM's site with ENGINE=vllm)
python3 -c "import torch, trl, datasets, omni_gspo.trainer; print('imports ok: trl', trl.__version__, 'torch', \
torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')" || exit 3
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader 2>/dev/null || true

left(){ echo $(( BUDGET - ($(date +%s) - T0) )); }
piece(){   # piece NAME CAP_SECONDS COMMAND...: run it under timeout (CAP, or what is left), log to $OUT/NAME.log
  local name=$1 cap=$2 s; shift 2; s=$(left)
  (( s > 30 )) || { echo "== $name: skipped, only $s s of the budget left"; return; }
  (( s < cap )) && cap=$s
  echo "== $name (timeout ${cap}s, $(( $(date +%s) - T0 ))s into the call)"
  local t=$(date +%s); timeout -k 10 "$cap" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "   $name: rc=$rc, $(( $(date +%s) - t ))s"; [[ $rc == 0 ]] || tail -15 "$OUT/$name.log"
}
tiny=${TINY:+--tiny}
for m in $MODES; do
  lora=; [[ $m == lora ]] && lora=--lora
  piece trl_$m 170 python3 "$C/bench_trl.py" --steps "$TRL_STEPS" $lora $tiny --json-out "$OUT/trl_$m.json"
  piece ours_$m 240 python3 "$H/ours.py" $lora $tiny --engine "$ENGINE" --steps "$OURS_STEPS" --warmup "$OURS_WARMUP" \
    --trl-dir "$C" --work "$WORK" --json-out "$OUT/ours_$m.json" $OURS_OVERRIDES
done

python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
res = {"target_ratio": 3.0, "metric": "end-to-end generated completion tokens / s over the timed window"}
def load(p): return json.loads(p.read_text()) if p.is_file() else None
for m in ("full", "lora"):
    trl, ours = load(out / f"trl_{m}.json"), load(out / f"ours_{m}.json")
    if trl is None and ours is None: continue
    e = {"trl_tokens_per_s": trl and trl["tokens_per_s"], "ours_tokens_per_s": ours and ours["tokens_per_s"],
         "trl_completion_len": trl and [trl["completion_len_min"], trl["completion_len_max"]],
         "ours_response_length_mean": ours and ours["response_length_mean"],
         "trl_prompt_tokens_mean": trl and trl["prompt_tokens_mean"],
         "ours_prompt_tokens_mean": ours and ours["prompt_tokens_mean"],
         "trl_step_s": trl and trl["step_s"], "ours_step_s": ours and ours["step_s"],
         "trl_peak_gpu_mem_gib": trl and trl["peak_gpu_mem_gib"], "ours_peak_mem_gb": ours and ours["peak_mem_gb"],
         "ours_actor_updates_per_step": ours and ours["actor_updates_per_step"], "ours_engine": ours and ours["engine"],
         "device": (trl or ours)["device"]}
    e["ratio"] = round(e["ours_tokens_per_s"] / e["trl_tokens_per_s"], 3) if trl and ours else None
    e["meets_target"] = e["ratio"] is not None and e["ratio"] >= res["target_ratio"]
    res[m] = e
(out / "result.json").write_text(json.dumps(res, indent=1) + "\n")
print(json.dumps({m: {k: res[m][k] for k in ("trl_tokens_per_s", "ours_tokens_per_s", "ratio",
                                             "ours_response_length_mean")}
                  for m in ("full", "lora") if m in res}))
PY
echo "call took $(( $(date +%s) - T0 ))s"
