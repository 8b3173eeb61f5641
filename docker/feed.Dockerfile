# The demo feed, built FROM the cluster's own Spark image so the driver's Spark and Python match the
# cluster's (and the PySpark the tests run: pyproject.toml pins the same version). Its Python is
# 3.10: spark_feeds stays 3.10-compatible (ruff targets py310 there, and
# tests/spark/test_python310.py imports and runs the feed under a real CPython 3.10).
FROM apache/spark:4.1.2-scala2.13-java17-python3-ubuntu
USER root
RUN pip install --no-cache-dir "websockets>=14" "orjson>=3.10"
# The checkpoints volume. An empty named volume takes the owner of the directory it is mounted on,
# so the directory is made here, owned by the image's user (spark, uid 185), before VOLUME.
RUN mkdir -p /checkpoints && chown spark:spark /checkpoints
VOLUME ["/checkpoints"]
# The driver is a plain Python process (docker-compose.yml, demo-feed): PySpark from the image's
# own Spark, and its py4j under a name that does not carry py4j's version.
RUN ln -s /opt/spark/python/lib/py4j-*-src.zip /opt/spark/python/lib/py4j-src.zip
COPY spark_feeds /app/spark_feeds
COPY docker/demo_feed.py /app/docker/demo_feed.py
ENV SPARK_HOME=/opt/spark
ENV PYTHONPATH=/app:/opt/spark/python:/opt/spark/python/lib/py4j-src.zip
USER spark
# The build fails here, not the feed at run time, if PySpark or its py4j cannot be imported so.
RUN python3 -c "import py4j, pyspark, spark_feeds.demo"
