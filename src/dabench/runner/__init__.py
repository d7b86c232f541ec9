"""dabench.runner."""
