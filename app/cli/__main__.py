"""`python -m app.cli`: the same as the `agentlasso` console script."""

import sys

from app.cli.main import main

sys.exit(main())
