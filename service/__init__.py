"""The Kiln daemon: the REST API of docs/api.md over the compile pipeline and the cache.

    from kiln.service import Settings, create_app
    app = create_app(Settings(cache_dir="/var/cache/kiln", tokens="s3cret"))

Start it with ``kiln serve`` (see ``docs/service.md``).
"""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
