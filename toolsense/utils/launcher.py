"""``launcher=slurm``'s Hydra launcher: hydra-submitit-launcher's Slurm launcher, with each Slurm task
of a job one rank of it.

A job of ``hydra.launcher.nodes`` x ``tasks_per_node`` tasks (``launcher=slurm_gpu``: one node, 8 tasks,
8 GPUs) runs the Hydra job once per task. Before the job's code runs, each task exports its rank from
Slurm's environment (:func:`toolsense.utils.ranks.export_slurm_ranks`); rank 0 alone writes Hydra's
``.hydra/`` files and the job's log file (the others log to their Slurm output only), and claims the
run folder (``pipeline.train``). The submitting process waits for every job (the launcher collects
rank 0's return), so a ``-m`` sweep's callbacks (the comparison table) run once all jobs ended.
A preempted or timed-out job is requeued through :meth:`checkpoint` (the same job again, which
resumes from its run folder; the inherited ``checkpoint``): ``training/preemption.py`` saves the
checkpoint first."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict, List, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, run_job, setup_globals
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import DictConfig, open_dict

from toolsense.utils.ranks import export_slurm_ranks

log = logging.getLogger(__name__)


def quiet_rank(config: DictConfig) -> None:
    """A rank other than 0 writes neither Hydra's ``.hydra/`` files nor its log file (rank 0 does,
    once for the job); it logs to the console (its Slurm output file) only."""
    with open_dict(config.hydra):
        config.hydra.output_subdir = None
        logging_cfg = config.hydra.job_logging
        if logging_cfg and "handlers" in logging_cfg:
            files = [name for name, h in logging_cfg.handlers.items() if "filename" in (h or {})]
            for name in files:
                del logging_cfg.handlers[name]
            for section in [logging_cfg.get("root") or {}, *(logging_cfg.get("loggers") or {}).values()]:
                if "handlers" in section:
                    section.handlers = [h for h in section.handlers if h not in files]


class RankedSlurmLauncher(SlurmLauncher):
    """hydra-submitit-launcher's ``SlurmLauncher`` whose jobs run one rank per Slurm task."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Submit the jobs and wait for them all (rank 0's return of each); the sweep's callbacks run
        after. Says first how to compare the sweep by hand, should this process stop before its jobs."""
        assert self.config is not None
        sweep = Path(str(self.config.hydra.sweep.dir)).absolute()
        log.info("%d Slurm job(s) of %s task(s) each; this process waits for them and then compares the sweep. "
                 "Stopped earlier, compare once they end with: python compare.py roots=[%s] output_dir=%s",
                 len(job_overrides), int(self.params.get("nodes", 1)) * int(self.params.get("tasks_per_node", 1)), sweep, sweep)
        return super().launch(job_overrides, initial_job_idx)

    def __call__(self, sweep_overrides: List[str], job_dir_key: str, job_num: int, job_id: str,
                 singleton_state: Dict[type, Singleton]) -> JobReturn:
        import submitit

        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        ranks = export_slurm_ranks()  # before any torch.distributed / Accelerate / DeepSpeed code runs
        Singleton.set_state(singleton_state)
        setup_globals()
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, sweep_overrides)
        with open_dict(sweep_config.hydra.job):
            sweep_config.hydra.job.id = submitit.JobEnvironment().job_id
            sweep_config.hydra.job.num = job_num
        if ranks["RANK"] != "0":
            quiet_rank(sweep_config)
        return run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=sweep_config,
                       job_dir_key=job_dir_key, job_subdir_key="hydra.sweep.subdir")


__all__ = ["RankedSlurmLauncher", "quiet_rank"]
