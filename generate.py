"""``python generate.py ...`` = ``toolsense-generate ...`` (toolsense/jobs/generate.py)."""
from toolsense.jobs.generate import main

if __name__ == "__main__":
    main()
