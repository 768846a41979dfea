"""`python -m couplescope.worker SPEC_JSON`: see couplescope.worker.main."""

import sys

from couplescope.worker.main import quiet_main

sys.exit(quiet_main())
