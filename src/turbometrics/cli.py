"""The ``turbometrics`` command line."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="turbometrics", description="Fast ML evaluation metrics.")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="time every metric on generated data against its baselines")
    bench.add_argument("--quick", action="store_true", help="small inputs: about a minute (the default)")
    bench.add_argument("--full", action="store_true", help="the issue-sized inputs (several GB, minutes)")
    bench.add_argument("--repeat", type=int, default=3, help="timed runs per implementation (best is kept)")
    bench.add_argument("--first-call", action="store_true",
                       help="also measure the Numba kernels' first-call cost, cold and warm cache")
    args = parser.parse_args(argv)

    if args.command == "bench":
        if args.quick and args.full:
            parser.error("choose one of --quick and --full")
        if args.repeat < 1:
            parser.error("--repeat must be >= 1")
        from . import _bench

        _bench.run(quick=not args.full, repeat=args.repeat)
        if args.first_call:
            print("\nNumba first call (fresh process; seconds)")
            for name, t in _bench.numba_first_call().items():
                print(f"  {name:<26} cold {t['cold']:.3f}   warm cache {t['warm']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
