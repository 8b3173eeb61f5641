# The demo feed, built FROM the cluster's own Spark image so the driver's Spark and Python match the
# cluster's (its Python is 3.10: spark_feeds is kept 3.10-compatible, which a test checks).
FROM apache/spark:4.1.2-scala2.13-java17-python3-ubuntu
USER root
RUN pip install --no-cache-dir "websockets>=14" "orjson>=3.10"
COPY spark_feeds /app/spark_feeds
COPY docker/demo_feed.py /app/docker/demo_feed.py
ENV PYTHONPATH=/app
USER spark
