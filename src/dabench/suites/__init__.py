"""dabench.suites."""
