"""The configuration (docs/protocol.md, Configuration) and what it names: user functions, server names."""
