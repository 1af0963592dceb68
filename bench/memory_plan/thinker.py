"""The Qwen3-Omni-30B-A3B thinker at its real size (or a tiny stand-in for CPU checks), LoRA-wrapped by the project's
own `configure_trainable`, built on the meta device and materialised with random values (no checkpoint: 59 GiB of bf16).

Shared by `bench/memory_plan/bench.py` and `bench/gpu_rollout/bench.py`. The real dimensions are those of the released
checkpoint's config.json (`Qwen/Qwen3-Omni-30B-A3B-Instruct` on the Hugging Face Hub, `thinker_config`): 48 text layers
of 128 experts (8 active), hidden 2048, vocabulary 152064, a 27-block vision tower and a 32-layer audio tower; 31.7 B
parameters.
"""
from __future__ import annotations
import torch
from transformers import Qwen3OmniMoeThinkerConfig, Qwen3OmniMoeThinkerForConditionalGeneration

TOKEN_IDS = dict(audio_token_id=151675, audio_start_token_id=151669, audio_end_token_id=151670, image_token_id=151655,
                 video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653, user_token_id=872)
ROPE = {'rope_type': 'default', 'rope_theta': 1e6, 'mrope_section': [24, 20, 20], 'interleaved': True,
        'mrope_interleaved': True}
TEXT = dict(vocab_size=152064, hidden_size=2048, intermediate_size=768, num_hidden_layers=48, num_attention_heads=32,
            num_key_value_heads=4, head_dim=128, moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8,
            decoder_sparse_step=1, norm_topk_prob=True, max_position_embeddings=65536, rms_norm_eps=1e-6,
            tie_word_embeddings=False, rope_parameters=ROPE, pad_token_id=151643, bos_token_id=151643,
            eos_token_id=151645)
VISION = dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, hidden_act='gelu_pytorch_tanh',
              in_channels=3, patch_size=16, spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=2048,
              num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24])
AUDIO = dict(num_mel_bins=128, encoder_layers=32, encoder_attention_heads=20, encoder_ffn_dim=5120, d_model=1280,
             output_dim=2048, downsample_hidden_size=480, max_source_positions=1500, n_window=50, n_window_infer=800,
             conv_chunksize=500)
# CPU check: every width shrunk, head_dim 32 (vLLM's CPU attention needs it), the real vocabulary and token ids kept
TINY = dict(text=dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, max_position_embeddings=4096,
                      rope_parameters={**ROPE, 'mrope_section': [4, 6, 6]}),
            vision=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=4, out_hidden_size=64,
                        num_position_embeddings=256, deepstack_visual_indexes=[0]),
            audio=dict(encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=128, d_model=64, output_dim=64,
                       downsample_hidden_size=32))
# the FSDP unit, as `ThinkerAdapter.load` sets `_no_split_modules`
DECODER_LAYER = 'Qwen3OmniMoeThinkerTextDecoderLayer'

def thinker_config(tiny:bool=False, # the tiny stand-in for CPU checks
                   layers:int|None=None, # text decoder layers (default: 48, or 2 when tiny)
                  )->Qwen3OmniMoeThinkerConfig:
    "The thinker's config at its real size, or tiny."
    t, v, a = dict(TEXT), dict(VISION), dict(AUDIO)
    if tiny: t.update(TINY['text'], num_hidden_layers=2); v.update(TINY['vision']); a.update(TINY['audio'])
    if layers: t['num_hidden_layers'] = layers
    return Qwen3OmniMoeThinkerConfig(text_config=t, vision_config=v, audio_config=a, position_id_per_seconds=13,
                                     seconds_per_chunk=2, **TOKEN_IDS)

def meta_policy(cfg:Qwen3OmniMoeThinkerConfig, mcfg, # the run config's `model` section (LoRA rank, alpha, targets)
               ):
    "The bf16 thinker on the meta device, made trainable by the project's `configure_trainable` (LoRA or full)."
    from omni_gspo.lora import configure_trainable
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device('meta'):
            model = Qwen3OmniMoeThinkerForConditionalGeneration(cfg)
            model._no_split_modules = [DECODER_LAYER]
            return configure_trainable(model, mcfg)
    finally: torch.set_default_dtype(torch.float32)

@torch.no_grad()
def materialise(model, device:str|torch.device, # where compute runs
                # where parameters live (default `device`; 'cpu' for FSDP CPU offload)
                params_on:str|torch.device|None=None,
                seed:int=0, std:float=0.02):
    "Allocate `model`'s meta tensors and fill them: N(0, std) weights, unit norms, zero LoRA B; buffers on `device`."
    from torch.distributed.tensor import DTensor
    device = torch.device(device)
    model.to_empty(device=params_on or device)
    g = torch.Generator(device=device).manual_seed(seed)
    for n, p in model.named_parameters():
        loc = p.to_local() if isinstance(p, DTensor) else p
        if 'lora_B' in n: loc.zero_()
        elif 'norm' in n and p.dim() == 1: loc.fill_(1.0)
        elif loc.device == device: loc.normal_(0, std, generator=g)
        else:   # host shard: drawn on the GPU
            loc.copy_(torch.empty(loc.shape, dtype=loc.dtype, device=device).normal_(0, std, generator=g))
    for m in model.modules():
        for k, b in list(m._buffers.items()):
            if b is not None: m._buffers[k] = b.to(device).zero_() if b.is_floating_point() else b.to(device)
    from omni_gspo.model import base_model
    re = base_model(model).model.rotary_emb
    re.__init__(re.config, device=device)   # the text rotary frequencies (the only buffers text-only inputs read)
    return model
