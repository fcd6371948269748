"""The ``bot`` command line's command groups, each with its arguments and what it does;
``bot.cli`` builds the parser from them and dispatches."""

import argparse
from typing import TypeAlias

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_CONFIG = 78
"""The configuration is unusable (sysexits' EX_CONFIG): a supervisor can tell it from a crash
and not restart the bot until the file is fixed."""

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The subcommands a group adds its parsers to."""
