# The push server. Python 3.11, the project installed without the Spark and browser extras' weight
# mattering at run time.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY spark_feeds ./spark_feeds
COPY web ./web
COPY static ./static
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["python", "-m", "server", "--host", "0.0.0.0"]
