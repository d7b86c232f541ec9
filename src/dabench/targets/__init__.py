"""dabench.targets."""
