"""Write a checkpoint folder of the Qwen3-Omni-30B-A3B thinker at its real widths with random bf16 weights, the
project's offline Qwen tokenizer, for `omni-gspo train model.path=...` on a GPU machine.

    python3 bench/front_door/checkpoint.py --layers 8 --out /dev/shm/thinker8

Real weights cannot be had here: throughput and memory do not depend on the values. The dimensions are the released
checkpoint's (`bench/memory_plan/thinker.py`). `--layers 48` is the full model (59 GiB of bf16). On the H200 machine
(128 GiB of memory, 64 GiB of disk) neither `/dev/shm` nor the disk holds it beside a run (vLLM's sleep keeps a 59 GiB
host copy of its weights), so `--disk /tmp/ck48 --disk-shards 7` moves that many shards to the disk and leaves symbolic
links in their place.
"""
from __future__ import annotations
import argparse, json, shutil, sys, time
from pathlib import Path
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT/'bench'/'memory_plan')]
from thinker import materialise, thinker_config

def move_shards(src:Path, disk:Path, n:int):
    "Move the first `n` safetensors shards of `src` to `disk`, each replaced by a link to where it went."
    shutil.rmtree(disk, ignore_errors=True); disk.mkdir(parents=True)
    for f in sorted(src.glob('*.safetensors'))[:n]:
        shutil.move(f, disk/f.name); f.symlink_to(disk/f.name)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--layers', type=int, default=8, help='text decoder layers (48: the full thinker)')
    ap.add_argument('--out', required=True, help='checkpoint folder to write (replaced when it exists)')
    ap.add_argument('--disk', help='a folder on another file system for some of the shards (linked from --out)')
    ap.add_argument('--disk-shards', type=int, default=0, help='how many shards go to --disk')
    a = ap.parse_args()
    from transformers import Qwen3OmniMoeThinkerForConditionalGeneration
    from omni_gspo.tokenizer import qwen_tokenizer
    t = time.perf_counter()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device('meta'): model = Qwen3OmniMoeThinkerForConditionalGeneration(thinker_config(layers=a.layers))
    finally: torch.set_default_dtype(torch.float32)
    materialise(model, 'cuda' if torch.cuda.is_available() else 'cpu')
    out, tmp = Path(a.out), Path(a.out + '.tmp')
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, max_shard_size='5GB')
    tok = qwen_tokenizer()
    tok.save_pretrained(tmp)   # the processor is built around it in code (`ThinkerAdapter.processor`)
    if a.disk: move_shards(tmp, Path(a.disk), a.disk_shards)
    shutil.rmtree(out, ignore_errors=True); tmp.rename(out)
    n = sum(p.numel() for p in model.parameters())
    print(json.dumps({'path': str(out), 'layers': a.layers, 'parameters': n, 'gib': round(2 * n / 2**30, 2),
                      'seconds': round(time.perf_counter() - t, 1)}), flush=True)

if __name__ == '__main__': main()
