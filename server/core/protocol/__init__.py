"""The wire: commands and options decoded once at the edge, messages encoded once."""
