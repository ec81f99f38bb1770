#!/usr/bin/env python3
"""External Brain command line, runnable from a checkout with nothing installed:

    python3 runtime/playbook_api.py search "ECS timeout"

A thin entrypoint: everything lives in the `external_brain` package beside this file.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from external_brain.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
