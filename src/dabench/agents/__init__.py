"""dabench.agents."""
