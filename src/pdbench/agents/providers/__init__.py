"""Provider clients: the offline mock and optional adapters for real LLM APIs."""
