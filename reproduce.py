"""``python reproduce.py ...`` = ``toolsense-reproduce ...`` (toolsense/jobs/reproduce.py)."""
from toolsense.jobs.reproduce import main

if __name__ == "__main__":
    main()
