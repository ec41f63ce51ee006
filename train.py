"""``python train.py ...`` = ``toolsense-train ...`` (toolsense/jobs/train.py)."""
from toolsense.jobs.train import main

if __name__ == "__main__":
    main()
