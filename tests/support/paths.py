"""Where the tests find the repository."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
