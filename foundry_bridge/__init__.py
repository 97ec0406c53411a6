"""foundry_bridge: local RAG evaluation data to Microsoft Foundry evaluators, and back."""

__version__ = "0.1.0"
