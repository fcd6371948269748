"""Stores: implementations of the core's store ports."""
