"""Summarise front-door legs: per-step breakdown and the issue's fields from the runs' `metrics_*.jsonl`.

    python3 bench/front_door/summarize.py FOLDER LEG[:resumed] ... > FOLDER/result.json

Each LEG names `FOLDER/metrics_LEG.jsonl` (the run folder's `metrics.jsonl` after the leg). A resumed leg's file holds
the earlier steps too: only the steps after the leg's own first step count as its own. Tokens of a step are its prompt
and response tokens (`perf/e2e_tokens_per_s_per_device` x `timing_s/step` on one device).
"""
from __future__ import annotations
import json, statistics, sys
from pathlib import Path

BREAKDOWN = ('gen', 'sleep', 'reward', 'old_log_prob', 'update', 'wake', 'sync', 'step')

def step_row(m:dict, leg:str, first:bool)->dict:
    "One step's breakdown, throughputs and memory from its metrics row."
    t = {k: round(m[f'timing_s/{k}'], 2) for k in BREAKDOWN if f'timing_s/{k}' in m}
    tokens = m['perf/e2e_tokens_per_s_per_device'] * m['timing_s/step']
    return {'step': m['training/global_step'], 'leg': leg, 'first_of_process': first, 'step_breakdown_s': t,
            'tokens': round(tokens), 'response_tokens_mean': round(m['response_length/mean'], 1),
            'generated_tokens_per_s': round(m['perf/gen_tokens_per_s']),
            'old_log_prob_tokens_per_s': round(tokens / m['timing_s/old_log_prob']),
            'update_tokens_per_s': round(tokens / m['timing_s/update']),
            'e2e_tokens_per_s_per_gpu': round(m['perf/e2e_tokens_per_s_per_device']),
            'peak_gib': round(m['perf/device_peak_gib'], 2), 'actor_peak_gib': round(m['perf/actor_peak_gib'], 2),
            'min_probs_pearson': round(m['training/rollout_actor_probs_pearson_corr'], 6)}

def leg_rows(folder:Path, spec:str)->list[dict]:
    "The steps a leg ran itself (`name:resumed`: after the steps already in the file when it started)."
    name, _, resumed = spec.partition(':')
    rows = [json.loads(l) for l in (folder/f'metrics_{name}.jsonl').read_text().splitlines() if l.strip()]
    if resumed: rows = rows[-int(resumed):]
    return [step_row(m, name, i == 0) for i, m in enumerate(rows)]

def summary(steps:list[dict])->dict:
    "The issue's fields over the steps of one shape: first steps of a process against the steady ones."
    steady = [s for s in steps if not s['first_of_process']]
    med = lambda k: round(statistics.median(s[k] for s in steady)) if steady else None
    steady_s = statistics.median(s['step_breakdown_s']['step'] for s in steady) if steady else None
    firsts = [s['step_breakdown_s']['step'] for s in steps if s['first_of_process']]
    return {'first_step_s': firsts, 'steady_step_s': steady_s and round(steady_s, 1),
            'first_over_steady': [round(f / steady_s, 2) for f in firsts] if steady_s else None,
            'update_tokens_per_s': med('update_tokens_per_s'),
            'old_log_prob_tokens_per_s': med('old_log_prob_tokens_per_s'),
            'e2e_tokens_per_s_per_gpu': med('e2e_tokens_per_s_per_gpu'),
            'min_probs_pearson': min(s['min_probs_pearson'] for s in steps),
            'peak_gib': max(s['peak_gib'] for s in steps)}

def main():
    folder, specs = Path(sys.argv[1]), sys.argv[2:]
    steps = [s for spec in specs for s in leg_rows(folder, spec)]
    print(json.dumps({'summary': summary(steps), 'steps': steps}, indent=1))

if __name__ == '__main__': main()
