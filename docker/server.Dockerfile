# The push server. Python 3.11; the core compiled with mypyc (scripts/compile_core.py) in a build
# stage that has a C compiler, its extension modules copied into the image that runs (which has
# none): a node logs "core: compiled (mypyc)" as it starts.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY spark_feeds ./spark_feeds
COPY scripts/compile_core.py ./scripts/compile_core.py
RUN pip install --no-cache-dir ".[compile]" && python scripts/compile_core.py \
    && python -c "import server.core.engine; from server.core import native; assert native.running_compiled(), native.describe()"

FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY server ./server
COPY spark_feeds ./spark_feeds
COPY web ./web
COPY static ./static
RUN pip install --no-cache-dir .
# The build's extension modules and the stamp that ties them to these sources (server/core/native.py).
COPY --from=build /app/sowpush_core__mypyc*.so ./
COPY --from=build /app/server/core ./server/core
EXPOSE 8000
CMD ["python", "-m", "server", "--host", "0.0.0.0"]
