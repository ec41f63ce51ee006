"""The reproduction study: the paper's configurations trained and evaluated (``sweeps.py``, into
fixed directories, resumable), then the report that sets each of the paper's findings beside
ours (``report.py``), built from the results files alone.

config.py: StudyConfig; sweeps.py: train.py / evaluate.py processes and their timings; timings.py:
reading them; archive.py: the shipped results; sweep.py: one sweep's comparison and the verdict
rules; findings/ (one module per finding, registered by number: findings/base.py): the seven findings; report.py: the
Markdown; run.py: ``reproduce.py``'s job. The paper's baseline rows beside ours live in their
own room, ``toolsense/paper/``.
"""
