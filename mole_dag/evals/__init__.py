"""Checks and the scorecard: mole grading its own runs."""
