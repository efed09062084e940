"""``python -m turbometrics.patch [--verbose] [--report] [--only LIB,...] (script.py | -m module) [args...]``:
run a script or a module with ``turbometrics.patch()`` on (see ``turbometrics.patch``)."""

from __future__ import annotations

import atexit
import runpy
import sys

from . import LIBRARIES, calls, patch


def report() -> None:
    """One line per patched entry point: calls accelerated and fallen back (stderr, at exit)."""
    seen = calls()
    names = sorted({name for name, _ in seen})
    for name in names:
        print(
            f"turbometrics.patch: {name}: {seen.get((name, 'accelerated'), 0)} accelerated, "
            f"{seen.get((name, 'fallback'), 0)} fallback",
            file=sys.stderr,
        )
    if not names:
        print("turbometrics.patch: no patched call", file=sys.stderr)


USAGE = f"""usage: python -m turbometrics.patch [-v] [--report] [--only LIB[,LIB]] (script.py | -m MODULE) [args...]

Run a Python script or module with calls into sacrebleu, rouge-score, scikit-learn, torchmetrics, mbrs
and lm-evaluation-harness accelerated by turbometrics (the same results).

  -v, --verbose     log every patched call (accelerated, or fallback and why)
  --report          at exit, print how many calls of each entry point ran accelerated or fell back
  --only LIB[,LIB]  patch only these libraries ({", ".join(LIBRARIES)}); default: every one installed
  -m MODULE         run a module as a script, as python -m does; what follows goes to it"""


def main(argv: list[str] | None = None) -> None:
    """Our options come first; the first other word (or -m MODULE) starts the command, whose own
    arguments are passed through untouched."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = report_at_exit = False
    only = module = None
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(USAGE)
            return
        if a in ("-v", "--verbose"):
            verbose = True
        elif a == "--report":
            report_at_exit = True
        elif a == "--only" and args:
            only = args.pop(0).split(",")
        elif a == "-m" and args:
            module = args.pop(0)
            break
        elif a.startswith("-"):
            sys.exit(f"{USAGE}\n\npython -m turbometrics.patch: unknown option {a!r}")
        else:
            args.insert(0, a)
            break
    if module is None and not args:
        sys.exit(f"{USAGE}\n\npython -m turbometrics.patch: give a script to run, or -m MODULE")
    patch(only, verbose=verbose)
    if report_at_exit:
        atexit.register(report)
    if module is not None:
        sys.argv = [module, *args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
