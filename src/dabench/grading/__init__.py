"""dabench.grading."""
