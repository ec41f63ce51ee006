"""``python annotate.py ...`` = ``toolsense-annotate ...`` (toolsense/jobs/annotate.py)."""
from toolsense.jobs.annotate import main

if __name__ == "__main__":
    main()
