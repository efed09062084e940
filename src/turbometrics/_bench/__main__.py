"""``python -m turbometrics._bench [--full]``: the ``turbometrics bench`` report without the command."""

import sys

from . import cases, run

run(cases("--full" not in sys.argv), quick="--full" not in sys.argv)
