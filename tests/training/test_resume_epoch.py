"""A run resumed mid-epoch over several processes draws the resumed epoch's order (not epoch 0's).

accelerate's skipping loader nests SkipBatchSampler > BatchSamplerShard > BatchSampler > sampler, one level deeper
than its ``set_epoch`` looks: on CI's Slurm cluster a 2-rank job cancelled in Stage 2's third epoch resumed with
weights 2e-3 away from torchrun's uninterrupted run (tests/slurm/test_slurm_ranks.py)."""

from __future__ import annotations

from torch.utils.data import BatchSampler

from toolsense.training.trainer import EpochSeededLengthGroupedSampler, ToolsenseSFTTrainer, nested_samplers


def _skipping_loader():
    from accelerate.data_loader import BatchSamplerShard, DataLoaderShard

    sampler = EpochSeededLengthGroupedSampler(2, lengths=list(range(1, 17)), seed=0)
    shard = BatchSamplerShard(BatchSampler(sampler, 2, drop_last=False), num_processes=2, process_index=0)
    loader = DataLoaderShard(list(range(16)), batch_sampler=shard)
    trainer = object.__new__(ToolsenseSFTTrainer)  # get_resumed_dataloader reads nothing of the trainer's state
    return sampler, ToolsenseSFTTrainer.get_resumed_dataloader(trainer, loader, 1)


def test_set_epoch_of_the_resumed_loader_reaches_the_sampler():
    sampler, skipped = _skipping_loader()
    assert nested_samplers(skipped) == [sampler]
    skipped.set_epoch(2)
    assert sampler.epoch == 2


def test_the_resumed_epoch_continues_that_epochs_order():
    from accelerate.data_loader import BatchSamplerShard, DataLoaderShard

    whole = EpochSeededLengthGroupedSampler(2, lengths=list(range(1, 17)), seed=0)
    loader = DataLoaderShard(list(range(16)), batch_sampler=BatchSamplerShard(BatchSampler(whole, 2, drop_last=False),
                                                                               num_processes=2, process_index=0))
    loader.set_epoch(2)
    epoch2 = [b.tolist() for b in loader]
    _, skipped = _skipping_loader()
    skipped.set_epoch(2)
    assert [b.tolist() for b in skipped] == epoch2[1:]  # epoch 2 after its first batch, as the uninterrupted run saw it
    _, stale = _skipping_loader()
    stale.set_epoch(0)
    assert [b.tolist() for b in stale] != epoch2[1:]  # epoch 0's order: what the resumed ranks drew before
