"""The bounded, conflating outbound queue of one socket (docs/protocol.md, Conflation)."""
