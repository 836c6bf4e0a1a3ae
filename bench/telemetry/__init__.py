"""Measuring and bounding an engine's process tree from outside, the same way for every engine."""
