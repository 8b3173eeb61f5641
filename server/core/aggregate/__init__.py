"""Aggregated views (docs/protocol.md, Aggregated views): grouping and projection parsed
(parse.py), the aggregate functions as running accumulators (functions.py), the group table that
turns input record changes into group record changes (groups.py), and the derived topic those
changes feed, which aggregated subscriptions subscribe to (view.py)."""
