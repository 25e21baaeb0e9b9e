"""`python -m agentwatch.cli`: the same as the `agentwatch` command."""

import sys

from agentwatch.cli.entry import main

sys.exit(main())
