"""``python compare.py ...`` = ``toolsense-compare ...`` (toolsense/jobs/compare.py)."""
from toolsense.jobs.compare import main

if __name__ == "__main__":
    main()
