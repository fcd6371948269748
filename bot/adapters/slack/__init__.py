"""The Slack adapter: slack-bolt (async) events and commands in, the core's replies out.

Nothing outside this package imports slack_bolt or slack_sdk, and no Slack object leaves it.
"""
