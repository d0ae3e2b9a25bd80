"""`python -m tandem`."""

import sys

from tandem.cli import main

sys.exit(main())
