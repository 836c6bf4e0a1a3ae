"""The runner: datagen, then per repetition and engine restore, cache, engine subprocess, verify, record."""
