"""Orchestration: loading configs, building agents, running experiments."""
