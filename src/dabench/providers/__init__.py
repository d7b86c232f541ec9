"""dabench.providers."""
