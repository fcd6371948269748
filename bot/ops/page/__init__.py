"""The page that shows, per channel, what the bot put in its prompts and what it cost."""
