"""The change logs the commands propose to: the local log of a server alone (local.py) and a
cluster's shared log in Redis (shared.py, with replica.py applying what the log brings back)."""
