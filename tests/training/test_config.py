"""The composed config: groups, experiments, and bad combinations rejected naming the field."""

from __future__ import annotations

import pytest
import torch

from tests.training.conftest import compose_train
from toolsense.training import to_train_config
from toolsense.training.config import TrainerConfig
from toolsense.training.trainer import plan_batch


@pytest.mark.parametrize("tuning, lr", [("lora", 2e-4), ("full", 2e-5)])
@pytest.mark.parametrize(
    "experiment, builder, formats, system",
    [  # the paper: ToolGen's clustered hierarchy for TG-H / TG-5FM; every configuration but TG has the system prompt (App. K)
        ("tg", "flat", ["desc2tok"], False),
        ("tg_h", "clustered", ["desc2tok"], True),
        ("tg_3fm", "flat", ["desc2tok", "tok2desc", "mcts"], True),
        ("tg_5fm", "clustered", ["desc2tok", "tok2desc", "mcts", "hier_next", "hier_node"], True),
    ],
)
def test_experiments_compose(experiment, builder, formats, system, tuning, lr):
    cfg = to_train_config(compose_train([f"experiment={experiment}", f"tuning={tuning}"]))
    assert (cfg.index.builder, cfg.memorization.formats, cfg.prompts.use_system_prompt) == (builder, formats, system)
    assert cfg.tuning.method == tuning and cfg.stage1.learning_rate == lr and cfg.experiment == experiment
    assert cfg.model.name_or_path == "smollm2_135m" and cfg.trainer.effective_batch == 1024
    assert cfg.tuning.embedding_rows == "all"  # LoRA with trainable embeddings (App. D); full trains every row anyway
    if tuning == "lora":
        t = cfg.tuning
        assert (t.r, t.alpha, t.dropout, t.target_modules) == (64, 128, 0.0, "all-linear")
    if builder == "clustered":
        assert (cfg.index.branching, cfg.index.seed) == (10, 0)  # ToolGen's 10-way k-means


def test_structural_index_stays_an_ablation_override():
    cfg = to_train_config(compose_train(["experiment=tg_5fm", "index=structural"]))
    assert cfg.index.builder == "structural" and "hier_next" in cfg.memorization.formats


def test_demo_freezes_base_rows():
    cfg = to_train_config(compose_train(["experiment=demo"]))
    assert (cfg.tuning.method, cfg.tuning.embedding_rows) == ("lora", "virtual")
    assert to_train_config(compose_train(["experiment=demo", "tuning.embedding_rows=all"])).tuning.embedding_rows == "all"


def test_hierarchical_format_with_flat_index_rejected():
    cfg = compose_train(["experiment=tg_5fm", "index=flat"])
    with pytest.raises(ValueError,
                       match=r"^memorization.formats: 'hier_next' needs a hierarchical index, but index.builder gives a flat index"):
        to_train_config(cfg)


def test_bad_choices_fail_at_compose_naming_the_field():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException) as e:
        compose_train(["model.dtype=float64"])
    assert "model.dtype" in str(e.value.__cause__) and "float32" in str(e.value.__cause__)
    with pytest.raises(ConfigCompositionException) as e:
        compose_train(["trainer.batching=packed"])
    assert "trainer.batching" in str(e.value.__cause__) and "length_grouped" in str(e.value.__cause__)
    with pytest.raises(ConfigCompositionException) as e:
        compose_train(["tuning.embedding_rows=some"])
    assert "tuning.embedding_rows" in str(e.value.__cause__) and "virtual" in str(e.value.__cause__)
    with pytest.raises(ConfigCompositionException) as e:
        compose_train(["trainer.no_such_key=1"])
    assert "no_such_key" in str(e.value.__cause__)


def test_bad_combinations_name_the_field():
    for rows in ("all", "virtual"):
        with pytest.raises(ValueError, match=r"^tuning.method=lora with trainer=ds_zero3: after each stage the adapters are merged"):
            to_train_config(compose_train(["trainer=ds_zero3", f"tuning.embedding_rows={rows}"]))
    with pytest.raises(ValueError, match=r"^tuning.embedding_rows=virtual freezes base-vocabulary rows under LoRA only"):
        to_train_config(compose_train(["tuning=full", "tuning.embedding_rows=virtual"]))
    with pytest.raises(ValueError, match=r"^stage2.warmup_ratio must be in \[0, 1\) \(a fraction of the stage's steps\), got 1.0"):
        to_train_config(compose_train(["stage2.warmup_ratio=1.0"]))
    with pytest.raises(ValueError, match=r"^trainer.per_device_batch must be >= 1"):
        to_train_config(compose_train(["trainer.per_device_batch=0"]))


def test_deepspeed_groups_carry_zero_stage():
    z2 = to_train_config(compose_train(["trainer=ds_zero2"])).trainer.deepspeed
    z3 = to_train_config(compose_train(["trainer=ds_zero3", "tuning=full"])).trainer.deepspeed
    assert z2["zero_optimization"]["stage"] == 2 and z3["zero_optimization"]["stage"] == 3
    assert z3["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    # gradients accumulate in fp32 under both (DeepSpeed's default is the model's bf16), read as DeepSpeed reads it
    from deepspeed.runtime.config import DtypeEnum, get_data_types_params

    for ds in (z2, z3):
        assert DtypeEnum(get_data_types_params(ds)["grad_accum_dtype"]).value == torch.float32


def test_effective_batch_split():
    p = plan_batch(TrainerConfig(effective_batch=1024, per_device_batch=8), world_size=8)
    assert (p.per_device, p.grad_accum, p.world_size, p.effective) == (8, 16, 8, 1024)
    p = plan_batch(TrainerConfig(effective_batch=16, per_device_batch=32), world_size=1)
    assert (p.per_device, p.grad_accum) == (16, 1)
    with pytest.raises(ValueError, match=r"trainer.effective_batch=100 is not a multiple of trainer.per_device_batch=8 x world_size=2"):
        plan_batch(TrainerConfig(effective_batch=100, per_device_batch=8), world_size=2)


def test_slurm_launcher_composes_to_submitit(tmp_path):
    """No GPU and the cluster's default partition unless a local/slurm.yaml in a config folder of the
    user's own (here: the committed example, in a folder added by ``hydra.searchpath`` as
    ``--config-dir`` adds one) says otherwise; the shipped configs stay untouched."""
    import shutil

    from omegaconf import OmegaConf

    from toolsense.training import register_configs
    from toolsense.utils.compose import compose, conf_dir

    register_configs()
    if (conf_dir() / "local" / "slurm.yaml").exists():
        pytest.skip("toolsense/conf/local/slurm.yaml (yours, git-ignored) sets this machine's launcher")
    mine = tmp_path / "myconf"
    cfg = compose("train", ["launcher=slurm", "hydra.launcher.cpus_per_task=1"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.toolsense_slurm.RankedSlurmLauncher"  # submitit's, with ranks from Slurm (#44)
    assert (launcher.gpus_per_node, launcher.tasks_per_node, launcher.partition, launcher.timeout_min) == (None, 1, None, 1440)
    assert launcher.cpus_per_task == 1
    (mine / "local").mkdir(parents=True)
    shutil.copy(conf_dir() / "local" / "slurm.example.yaml", mine / "local" / "slurm.yaml")
    searchpath = f"hydra.searchpath=[file://{mine}]"
    cfg = compose("train", ["launcher=slurm", searchpath], return_hydra_config=True)
    plain = compose("train", [searchpath], return_hydra_config=True)
    # the local file sets the cluster (partition); the job's shape stays the preset's (launcher=slurm: no GPU, 32 GB)
    assert (cfg.hydra.launcher.gpus_per_node, cfg.hydra.launcher.partition, cfg.hydra.launcher.mem_gb) == (None, "gpu", 32)
    gpu = compose("train", ["launcher=slurm_gpu", searchpath], return_hydra_config=True).hydra.launcher
    assert (gpu.tasks_per_node, gpu.gpus_per_node, gpu.partition) == (8, 8, "gpu")
    assert "partition" not in plain.hydra.launcher  # the local Slurm file touches only launcher=slurm
    assert OmegaConf.to_container(cfg.hydra.sweep)["subdir"] == "${hydra.job.num}_${experiment}-${tuning.method}"
    assert cfg.hydra.callbacks.compare._target_ == "toolsense.comparison.compare.CompareAfterSweep"


def test_stage1_sized_in_epochs_sees_every_format_equally_often():
    """stage1.epochs=1 (max_steps=-1): TG and TG-3FM each see every one of their formats once per
    tool, whatever the mix; the SFTConfig trains by epochs, not steps."""
    from collections import Counter

    from tests.training.conftest import TINY
    from toolsense.catalog.config import load_from_config
    from toolsense.data.memorization import build_memorization_examples
    from toolsense.index.config import index_from_config
    from toolsense.training.trainer import sft_config

    sized = [o for o in TINY if not o.startswith("stage1.max_steps")] + ["stage1.max_steps=-1", "stage1.epochs=1"]
    for experiment, formats in (("tg", ["desc2tok"]), ("tg_3fm", ["desc2tok", "tok2desc", "mcts"])):
        cfg = to_train_config(compose_train([f"experiment={experiment}", *sized]))
        catalog = load_from_config(cfg.catalog)
        index = index_from_config(cfg.index, catalog, None)
        counts = Counter(e.kind for e in build_memorization_examples(catalog, index, cfg.memorization))
        assert counts == {f: len(catalog) for f in formats}
        args = sft_config(cfg.trainer, cfg.stage1, "unused", "t")
        assert (args.num_train_epochs, args.max_steps) == (1.0, -1)


@pytest.mark.parametrize("override, message", [  # issue 38: each raised deep inside numpy / the Trainer, no field named
    ("stage1.epochs=inf", "stage1.epochs=inf: must be a finite number"),  # the converter's check (toolsense/utils/config.py)
    ("stage2.learning_rate=inf", "stage2.learning_rate=inf: must be a finite number"),
    ("trainer.seed=-5", "trainer.seed must be an integer in [0, 2**32 - 1] (numpy's seed range), got -5"),
    ("trainer.seed=4294967296", "trainer.seed must be an integer in [0, 2**32 - 1]"),
])
def test_values_numpy_or_the_trainer_would_reject_are_refused_naming_the_field(override, message):
    with pytest.raises(ValueError) as e:
        to_train_config(compose_train([override]))
    assert message in str(e.value)
