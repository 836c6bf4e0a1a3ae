"""Result files -> the report's view model."""
