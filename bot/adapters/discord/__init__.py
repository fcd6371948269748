"""The Discord adapter: gateway events in, the core's messages and commands; replies out.

Only this package imports discord.py; nothing from it reaches the core.
"""
