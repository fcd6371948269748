"""The running Discord adapter's fixtures."""

from tests.support.discord_bot import *  # noqa: F403
