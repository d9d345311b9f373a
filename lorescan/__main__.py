"""``python -m lorescan``."""

import sys

from ._cli.main import main

sys.exit(main())
