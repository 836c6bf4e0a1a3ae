"""Table inspection: what a snapshot holds, read from the table's own metadata and files."""
