"""The demo pipelines as a file to run (``python3 docker/demo_feed.py``, the compose file's feed;
``spark-submit`` also takes it): the driver is this Python process, with SPARK_MASTER naming
the cluster (spark_feeds/session.py)."""

from spark_feeds.demo import main

main()
