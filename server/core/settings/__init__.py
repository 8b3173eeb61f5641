"""The configuration (PROTOCOL section 2) and what it names: user functions, server names."""
