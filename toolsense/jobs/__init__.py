"""The seven jobs, one module each: a Hydra main over the configs shipped in ``toolsense/conf``.

Each is a console command of the installed package (``toolsense-<job>``, pyproject's
``[project.scripts]``), ``python -m toolsense.jobs.<job>``, and, in a checkout, ``python <job>.py``
(the repo root's wrappers). Each registers its schema, converts Hydra's config with ``to_config``
and hands it to one ``run``; Hydra names the job (its log file, ``hydra.job.name``) after the module.
A user's own config folder joins the shipped one with ``--config-dir <dir>`` (or
``hydra.searchpath=[file://<dir>]``).
"""
