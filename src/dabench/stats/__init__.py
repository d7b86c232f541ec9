"""dabench.stats."""
