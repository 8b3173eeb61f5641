"""The bounded, conflating outbound queue of one socket (PROTOCOL 6.3)."""
