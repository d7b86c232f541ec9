"""dabench.platform."""
