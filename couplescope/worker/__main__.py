"""`python -m couplescope.worker SPEC_JSON`: see couplescope.worker.main."""

import sys

from couplescope.worker.main import main

sys.exit(main())
