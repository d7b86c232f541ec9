"""dabench.world."""
