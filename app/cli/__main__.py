"""`python -m agentlasso.cli`: the same as the `agentlasso` console script."""

import sys

from agentlasso.cli.main import main

sys.exit(main())
