"""The paper's baseline rows beside ours (docs/reference/paper_tables.md): BM25 and dense on ToolBench G1 and the
released RRB part at the paper's settings, the catalog-density measurement, the whole-catalog dense
encoding, and the page built from the results files alone. ``python -m toolsense.paper``."""
