"""One module per command family: decide what a command means, propose its changes, ack it."""
