"""``python -m ctensor.bench``: see ctensor.bench.main."""

import sys

from .main import main

sys.exit(main())
