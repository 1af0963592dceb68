"""FSDP2 on 2 ranks (gloo, CPU) against one unsharded process: weight export, loss, gradients and one AdamW step.

The 2-rank side runs in spawned processes; rank 0 saves what it gathered, and this process recomputes everything
unsharded and compares. Data parallel with an uneven split: of N = 4 responses rank 0 takes 1 and rank 1 takes 3.
Each rank's loss (GSPO minus 0.01·entropy, as the actor computes it) divides by N / world instead of its own count,
so with FSDP's mean over ranks the averaged gradient and the mean of the rank losses are those of the whole batch in
one process. The bf16 case is compared with the fp32 single process, within bf16 rounding.
"""
import time
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from omni_gspo.algos import agg_loss, policy_loss
from omni_gspo.config import build_config
from omni_gspo.fsdp import shard_model
from omni_gspo.lora import export_weights, full_tensor
from omni_gspo.tiny import tiny_model_dir
from omni_gspo.model import load_model
from omni_gspo.lora import configure_trainable
from omni_gspo.logprobs import completion_logprobs

N, P, R, WORLD = 4, 8, 6, 2
RANK_ROWS = [[0], [1, 2, 3]]
# name: (lora_rank, model dtype, shard_model options)
CASES = {'lora': (8, 'float32', {}), 'full': (0, 'float32', {}),
         'lora_ac_offload': (8, 'float32', dict(activation_checkpointing=True, cpu_offload=True)),
         'lora_bf16': (8, 'bfloat16', dict(param_dtype=torch.bfloat16))}
TOL = dict(rtol=1e-5, atol=1e-5)   # fp32: only the order of summation differs between 1 and 2 ranks
LR = 1e-2
# AdamW's first step moves a weight by lr·g/(|g| + eps): for gradient entries near zero (|g| ~ eps = 1e-8) a 1e-9
# difference in g (summation order) moves the result by a sizeable fraction of lr. Updated weights agree to 1% of lr.
STEP_TOL = dict(rtol=1e-5, atol=LR / 100)


def policy(lora_rank, dtype):
    "The tiny thinker, LoRA (adapters randomised so that merging matters) or full-parameter, the same in every process."
    torch.manual_seed(0)
    # full-parameter: the towers frozen (their default trains them; a text batch would leave them without gradients)
    towers = {'model.freeze_vision_tower': True, 'model.freeze_audio_tower': True} if lora_rank == 0 else {}
    m = configure_trainable(load_model(tiny_model_dir('small', 300), dtype, torch.device('cpu')),
                            build_config(overrides={'model.lora_rank': lora_rank} | towers).model)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if 'lora_B' in n: p.normal_(0, 0.1)
    return m


def batch(rows):
    "Rows `rows` of a fixed batch: left-padded prompts, responses of different lengths, one advantage each."
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(20, 400, (N, P + R), generator=g)
    am = torch.ones_like(ids); am[1, :3] = 0; am[3, :5] = 0
    rm = torch.ones(N, R); rm[0, 4:] = 0; rm[2, 2:] = 0
    return ids[rows], am[rows], rm[rows], torch.randn(N, generator=g)[rows]


def export(model): return {k: v.clone() for k, v in export_weights(model)}


def train_step(model, rows, world):
    """One step on `rows` of GSPO minus 0.01·entropy (the actor's loss): (loss, gradient norm, gathered gradients),
    AdamW applied."""
    ids, am, rm, adv = batch(rows)
    model.train()
    lp, ent = completion_logprobs(model, ids, am, P, with_entropy=True)
    pg, _ = policy_loss('gspo', lp, lp.detach(), adv, rm, num_seqs=N / world)
    # the entropy makes the value depend on the forward
    loss = pg - 0.01 * agg_loss(ent, rm, 'seq-mean-token-mean', num_seqs=N / world)
    loss.backward()
    params = [p for p in model.parameters() if p.requires_grad]
    norm = full_tensor(torch.nn.utils.clip_grad_norm_(params, float('inf')))
    grads = {n: full_tensor(p.grad) for n, p in model.named_parameters() if p.requires_grad}
    torch.optim.AdamW(params, lr=LR).step()
    return loss.detach(), norm, grads


def generate(model, rank, synced):
    "Greedy continuation of prompt `rank`, rank r asking for 4 + 8r new tokens: the ranks finish at different steps."
    ids, am, _, _ = batch([rank])
    with torch.no_grad():
        out = model.generate(input_ids=ids[:, :P], attention_mask=am[:, :P], do_sample=False,
                             max_new_tokens=4 + 8 * rank, min_new_tokens=4 + 8 * rank, synced_gpus=synced,
                             pad_token_id=0)
    return out[0, P:]


def _worker(rank, folder):
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'file://{folder}/store', rank=rank, world_size=WORLD)
    res = {}
    for name, (r, dtype, kw) in CASES.items():
        m = shard_model(policy(r, dtype), **kw)
        # every forward all-gathers: ranks must run as many as the slowest; transformers does (synced_gpus) for the
        # model shard_model flagged
        if name == 'lora':
            res['generated'] = [None] * WORLD
            dist.all_gather_object(res['generated'], generate(m, rank, synced=None))
        before = export(m)
        loss, norm, grads = train_step(m, RANK_ROWS[rank], WORLD)
        dist.all_reduce(loss)
        res[name] = dict(before=before, loss=loss / WORLD, norm=norm, grads=grads, after=export(m))
    if rank == 0: torch.save(res, f'{folder}/rank0.pt')
    dist.destroy_process_group()


@pytest.fixture(scope='module')
def sharded(tmp_path_factory):
    "What rank 0 of the 2-rank run gathered, per case."
    folder = tmp_path_factory.mktemp('fsdp')
    t = time.perf_counter()
    mp.spawn(_worker, args=(str(folder),), nprocs=WORLD)
    print(f'2-rank run: {time.perf_counter() - t:.1f} s')
    return torch.load(folder/'rank0.pt')


def single(name):
    "The same step unsharded in one process on the whole batch: (export before, loss, norm, grads, export after)."
    r, dtype, _ = CASES[name]
    m = policy(r, 'float32')
    before = export(m)
    loss, norm, grads = train_step(m, list(range(N)), 1)
    return before, loss, norm, grads, export(m)


def assert_same(a:dict, b:dict, tol:dict|None=None):
    "Same keys in the same order, and per key equal tensors (`tol` None) or close ones."
    assert list(a) == list(b)
    for k in a:
        if tol is None: assert torch.equal(a[k], b[k]), k
        else: torch.testing.assert_close(a[k], b[k], **tol, msg=k)


@pytest.mark.parametrize('name', ['lora', 'full', 'lora_ac_offload'])
def test_two_ranks_match_one(sharded, name):
    before, loss, norm, grads, after = single(name)
    s = sharded[name]
    assert_same(s['before'], before)
    torch.testing.assert_close(s['loss'], loss, **TOL)
    torch.testing.assert_close(s['norm'], norm, **TOL)
    assert_same(s['grads'], grads, TOL)
    assert_same(s['after'], after, STEP_TOL)
    assert any(not torch.equal(after[k], before[k]) for k in after)   # the step moved the weights


def test_generate_two_ranks(sharded):
    "HF generation on the sharded LoRA model (ranks finishing at different steps) gives the unsharded tokens."
    m = policy(8, 'float32')
    for rank, got in enumerate(sharded['generated']): assert torch.equal(got, generate(m, rank, synced=False)), rank


def test_lora_export_is_merge_and_unload(sharded):
    assert_same(sharded['lora']['before'], policy(8, 'float32').merge_and_unload().state_dict())


def test_bf16_compute_close_to_fp32(sharded):
    "bf16 compute (fp32 adapters and reductions) on 2 ranks stays within bf16 rounding of the fp32 single process."
    _, loss, norm, _, _ = single('lora_bf16')
    s = sharded['lora_bf16']
    assert {v.dtype for k, v in s['grads'].items()} == {torch.float32}
    torch.testing.assert_close(s['loss'], loss, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(s['norm'], norm, rtol=5e-2, atol=0.0)
