"""dabench.tasks."""
