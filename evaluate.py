"""``python evaluate.py ...`` = ``toolsense-evaluate ...`` (toolsense/jobs/evaluate.py)."""
from toolsense.jobs.evaluate import main

if __name__ == "__main__":
    main()
