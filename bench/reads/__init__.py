"""Read amplification: what readers gain from a compaction."""
