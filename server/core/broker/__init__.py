"""The state every command reads and the one writer of each part of it: topics, sessions,
client names, sequences, bookmarks, timers, durability."""
