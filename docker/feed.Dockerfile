# The demo feed, built FROM the cluster's own Spark image so the driver's Spark and Python match the
# cluster's. Its Python is 3.10: spark_feeds stays 3.10-compatible (ruff targets py310 there, and
# tests/spark/test_python310.py imports and runs the feed under a real CPython 3.10).
FROM apache/spark:4.1.2-scala2.13-java17-python3-ubuntu
USER root
RUN pip install --no-cache-dir "websockets>=14" "orjson>=3.10"
# The checkpoints volume. An empty named volume takes the owner of the directory it is mounted on,
# so the directory is made here, owned by the image's user (spark, uid 185), before VOLUME.
RUN mkdir -p /checkpoints && chown spark:spark /checkpoints
VOLUME ["/checkpoints"]
COPY spark_feeds /app/spark_feeds
COPY docker/demo_feed.py /app/docker/demo_feed.py
ENV PYTHONPATH=/app
USER spark
