"""Learning curves from one run's checkpoints, and the regime a pilot's curves must reach: the
evaluate.py process of each saved checkpoint while a sweep trains (``points.py``), the done.json
that lets a rerun skip a finished evaluation (``done.py``), and the report section that reads
each arm's curve against the registered rules (``regime.py``). The study (study/sweeps.py,
study/report.py) drives them; they read files and start processes, and import no study code."""
