"""``python -m turbometrics.patch [--verbose] [--only LIB,...] (script.py | -m module) [args...]``:
run a script or a module with ``turbometrics.patch()`` on (see ``turbometrics.patch``)."""
from __future__ import annotations

import argparse
import runpy
import sys

from . import LIBRARIES, patch


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m turbometrics.patch",
        description="Run a Python script or module with sacrebleu, rouge-score, scikit-learn and torchmetrics "
                    "calls accelerated by turbometrics (same results).")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every patched call (accelerated/fallback)")
    parser.add_argument("--only", metavar="LIB[,LIB]", help=f"patch only these libraries ({', '.join(LIBRARIES)})")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script (like python -m)")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script.py and its arguments (or the module's)")
    args = parser.parse_args(argv)
    if args.module is None and not args.target:
        parser.error("give a script to run, or -m MODULE")
    patch(args.only.split(",") if args.only else None, verbose=args.verbose)
    if args.module is not None:
        sys.argv = [args.module, *args.target]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(args.target)
        runpy.run_path(args.target[0], run_name="__main__")


if __name__ == "__main__":
    main()
