"""A chatbot for Discord and Slack that keeps each channel's conversation in SQLite."""

__version__ = "0.1.0"
