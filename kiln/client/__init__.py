"""The client half of Kiln: talk to a server (``Client``/``AsyncClient``), resolve a target for
this device, keep a local cache, load and run executables, autotune. Importable with only the
client dependencies (httpx, numpy, iree-base-runtime, cryptography)."""

from kiln.client.sdk import (
    AsyncClient,
    Client,
    ClientModule,
    ConnectionFailed,
    LoadFailed,
    RemoteArtifact,
    RemoteCompileResult,
    RemoteTargetError,
    RetryPolicy,
    read_graph,
)

__all__ = [
    "AsyncClient",
    "Client",
    "ClientModule",
    "ConnectionFailed",
    "LoadFailed",
    "RemoteArtifact",
    "RemoteCompileResult",
    "RemoteTargetError",
    "RetryPolicy",
    "read_graph",
]
