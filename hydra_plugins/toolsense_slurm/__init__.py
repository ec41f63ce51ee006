"""Hydra finds launchers only under the ``hydra_plugins`` package: ``launcher=slurm`` names this one,
whose code is ``toolsense/utils/launcher.py`` (each Slurm task one rank of its job)."""

from toolsense.utils.launcher import RankedSlurmLauncher as _Ranked


class RankedSlurmLauncher(_Ranked):
    """``hydra.launcher._target_: hydra_plugins.toolsense_slurm.RankedSlurmLauncher`` (conf/launcher/slurm.yaml)."""
