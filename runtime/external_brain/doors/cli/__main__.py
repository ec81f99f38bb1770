"""`python -m external_brain.doors.cli ...`: how the product runs itself in a child process (the
detached `learn` of a session-end hook, git's merge driver when no checkout script is found)."""

import sys

from . import main

sys.exit(main())
