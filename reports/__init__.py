"""The HTML comparison report, Markdown tables and flat exports, from result files only."""
