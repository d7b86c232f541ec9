"""dabench.report."""
