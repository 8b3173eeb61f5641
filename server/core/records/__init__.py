"""Record values: versions, keys, field paths, select lists, deltas and merges."""
