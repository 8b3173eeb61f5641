"""Entry point for spark-submit, which runs a file rather than a module: the demo pipelines."""

from spark_feeds.demo import main

main()
