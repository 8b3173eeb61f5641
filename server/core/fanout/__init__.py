"""From a change to the messages it means: topics, subscriptions and their views, windows,
conflation intervals, transactions delivered whole."""
