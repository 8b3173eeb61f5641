"""State of the World: each topic's records, their recent history, the transaction log's format."""
