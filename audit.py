"""``python audit.py ...`` = ``toolsense-audit ...`` (toolsense/jobs/audit.py)."""
from toolsense.jobs.audit import main

if __name__ == "__main__":
    main()
