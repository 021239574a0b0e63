"""Agents: scripted policies and LLM-backed agents."""
