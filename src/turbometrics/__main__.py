"""``python -m turbometrics ...``: the ``turbometrics`` command (as ``python -m sacrebleu``)."""

import sys

from .cli import main

sys.exit(main())
