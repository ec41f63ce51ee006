"""How a study's runs ran, beside what they found: the results archive a study packs as runs finish and resumes
from on a fresh machine (``archive.py``), the wall time of its sweeps (``timings.py``), the code state each finished
run recorded (``code_states.py``), the pauses and kills its operator logged (``interruptions.py``) and the regime
each arm reached against the rules that chose its setting (``regime.py``). Plain files and plain values: the study
room (study/conduct.py) assembles them into its report's "How the runs ran" section."""
