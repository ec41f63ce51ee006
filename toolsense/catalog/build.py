"""Build a catalog into the cache and print its coverage.

    python -m toolsense.catalog.build toolbench [--data-dir ../shared/data] [--out FILE] [--force]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import toolsense.catalog.toolbench  # noqa: F401  (registers the builder)
from toolsense.catalog.builders import CATALOG_BUILDERS, coverage_path, coverage_table, default_output


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolsense.catalog.build", description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=CATALOG_BUILDERS.names(), help="which catalog to build")
    ap.add_argument("--data-dir", default=os.environ.get("TOOLSENSE_DATA", "../shared/data"),
                    help="the shared data folder (default: $TOOLSENSE_DATA or ../shared/data)")
    ap.add_argument("--out", default=None, help="output JSONL (default: $TOOLSENSE_CACHE/catalogs/<name>.jsonl)")
    ap.add_argument("--force", action="store_true", help="rebuild even if the output exists")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out) if args.out else default_output(args.name)
    if out.is_file() and not args.force:
        cov = json.loads(coverage_path(out).read_text()) if coverage_path(out).is_file() else None
        print(f"{out} exists (pass --force to rebuild)")
    else:
        cov = CATALOG_BUILDERS.get(args.name)(Path(args.data_dir), out)
        print(f"wrote {out} and {coverage_path(out)}")
    if cov:
        print(coverage_table(cov))
    return 0


if __name__ == "__main__":
    sys.exit(main())
