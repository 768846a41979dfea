"""`python -m couplescope` is the `couplescope` command."""

import sys

from couplescope.cli import main

sys.exit(main())
