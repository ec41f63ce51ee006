"""``python -m toolsense.paper``: the paper's baseline rows beside ours (docs/reference/paper_tables.md).

    python -m toolsense.paper                 # the BM25 settings (minutes), then the page
    python -m toolsense.paper --dense         # first encode the catalog per document (gold first, resumable;
                                              # ~32-40 min a document on a quiet core)
    python -m toolsense.paper --page-only     # rebuild the page from what is under --out

tables.py holds the settings and runs each as an evaluation; density.py the
catalog-density measurement; dense.py the gold-first progressive encoding and, until it is
complete, the dense rows from its sample; page.py builds the page from the results files alone.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Sequence

from toolsense.paper.dense import DOCUMENTS, encode, run_sample
from toolsense.paper.density import run_density
from toolsense.paper.page import write_page
from toolsense.paper.tables import BENCHMARKS, SETTINGS, run_setting

log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.paper", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="outputs/paper_tables", help="where the evaluations go (resumable)")
    ap.add_argument("--page", default="docs/reference/paper_tables.md")
    ap.add_argument("--dense", action="store_true", help="also run the dense settings (each encodes the catalog once, "
                    "gold tools first, then a seeded random order; ~40 min per document on a quiet core, hours on a "
                    "loaded one; resumable, and instant from the embedding cache afterwards)")
    ap.add_argument("--only", nargs="*", default=None, help="setting names to run (the page shows all present)")
    ap.add_argument("--page-only", action="store_true", help="run nothing; rebuild the page from --out")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out, data_dir = Path(args.out), os.environ.get("TOOLSENSE_DATA", "../shared/data")
    if not args.page_only and not Path(data_dir).is_dir():
        raise SystemExit(f"the shared data folder {data_dir} does not exist (TOOLSENSE_DATA, default ../shared/data): "
                         "the ToolBench test queries and the released RRB part are read from it")
    if args.dense and not args.page_only:
        encode(data_dir, [d for n, d in DOCUMENTS.items() if args.only is None or n in args.only])
    for s in SETTINGS if not args.page_only else ():
        if args.only is not None and s.name not in args.only:
            continue
        if s.dense and not args.dense:
            log.info("%s: dense, skipped without --dense (the page keeps what %s holds)", s.name, out / s.name)
            continue
        run_setting(s, out, BENCHMARKS, data_dir)
    if not args.page_only:
        run_density(out, data_dir)
        run_sample(out, data_dir)
    page = write_page(out, Path(args.page), SETTINGS)
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
