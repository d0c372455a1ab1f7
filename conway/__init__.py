"""Conway: a research harness for persistent digital agents."""

__version__ = "0.1.0"
