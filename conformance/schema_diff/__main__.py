"""``python -m conformance.schema_diff``: see :mod:`conformance.schema_diff.cli`."""

import sys

from .cli import main

sys.exit(main())
