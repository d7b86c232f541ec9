"""dabench.judge."""
