"""``kiln serve --compile remote``: the compile engine with its compiles handed to the workers.

``RemotePipeline`` is the engine (``kiln.compiler.pipeline.Pipeline``) with one stage replaced:
where the embedded engine runs a compile in its own worker pool, this one stashes the canonical
text, sends a ``CompileTask`` to the target kind's queue and waits for the record a worker files
(``kiln.cluster.queue``). Everything else is the engine's: targets, options, prepare (in this
replica's prepare pool), the compile key, the cache lookup, the per-target fan-out and the
failure memory. Identical keys in flight in this process share one wait; across replicas they
share one queued message; across workers, the cache's lease.
"""

from __future__ import annotations

from typing import Any

from kiln.cache.singleflight import LocalFlight
from kiln.compiler.pipeline import Artifact, Pipeline
from kiln.dialects.types import PreparedGraph
from kiln.targets import TargetSpec
from kiln.targets.options import CompileOptions

from .queue import CompileQueue
from .types import CompileTask, graph_to_json

__all__ = ["RemotePipeline"]


class RemotePipeline(Pipeline):
    """The engine, compiling on the shared queue. Needs a cache shared through Redis."""

    def __init__(self, *, queue: CompileQueue, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert self.cache is not None and self.cache.redis is not None, \
            "remote compiles need the shared (Redis) cache"
        self.queue = queue
        self._waits: LocalFlight[Any] = LocalFlight()

    def compile_prepared(
        self, graph: PreparedGraph, spec: TargetSpec, options: CompileOptions
    ) -> Artifact:
        assert self.cache is not None
        kh = self.key_for(graph, spec, options).digest()
        hit = self.lookup(spec.target, kh)
        if hit is not None:
            return hit
        task = CompileTask(key=kh, target=spec.target, options=options.to_json(),
                           graph=graph_to_json(graph), mlir=self.queue.stash_graph(graph.mlir))
        cache = self.cache
        res, _shared = self._waits.do(kh, lambda: self.queue.compile(task, kind=spec.kind,
                                                                     cache=cache))
        # Built by a worker for this request (or found there meanwhile): not a hit of this one.
        return self._artifact(spec.target, kh, res.record, cached=False)

    def close(self) -> None:
        super().close()
        self.queue.close()
