"""Cluster mode: compiles on a shared queue (Celery over Redis) instead of in the API replica.

    kiln serve --redis-url URL --compile remote      # API replicas: prepare, enqueue, wait
    kiln worker --redis-url URL --queues cpu,gpu     # compile workers: consume, compile, file

``types`` is what crosses the queue (``CompileTask``), ``queue`` the Celery app and the API
replica's side (``CompileQueue``), ``remote`` the engine with its compile stage on the queue
(``RemotePipeline``), ``worker`` the worker process. docs/cluster.md has the operator's view.
"""
