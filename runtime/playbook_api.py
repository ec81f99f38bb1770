#!/usr/bin/env python3
"""External Brain command line, runnable from a checkout with nothing installed:

    python3 runtime/playbook_api.py search "ECS timeout"

A thin entrypoint: everything lives in the `external_brain` package beside this file.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from external_brain.doors.cli import main  # noqa: E402

if __name__ == "__main__":
    # The checkout's own example vault, for when no vault is given or found (README, "Install `brain`"):
    # only this script offers it; the installed `brain` never falls back to a checkout.
    from pathlib import Path

    code = main(example_vault=Path(__file__).resolve().parent.parent)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left (`... | head`): nothing is lost that it wanted
            pass
    # Everything is written, flushed and closed by now, so the interpreter's teardown (freeing
    # every object and module, ~8 ms: a fifth of a search at 10,000 cards) is skipped.
    # docs/decisions.md, "Start-up cost".
    os._exit(code)
