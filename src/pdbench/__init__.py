"""pdbench: a reproducible harness for the iterated Prisoner's Dilemma."""

__version__ = "0.1.0"
