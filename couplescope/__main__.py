"""`python -m couplescope` is the `couplescope` command."""

import sys

from couplescope.frontends.command import main

sys.exit(main())
