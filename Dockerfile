# Kiln daemon image (design card; see docs/service.md). Build: docker build -t kiln .
# The install steps are scripts/bootstrap.sh, the same script the README and CI run, so the
# image cannot drift from a developer machine. Runs as an unprivileged user.
FROM python:3.11-slim-bookworm

# The Debian packages bootstrap.sh would install (Vulkan loader + lavapipe for runtime checks,
# redis-server for a single-box shared cache, nginx-light for the artifact front); installed here,
# as root, so bootstrap skips apt.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends mesa-vulkan-drivers libvulkan1 redis-server nginx-light \
 && rm -rf /var/lib/apt/lists/*

# /etc/kiln/signing: where deploy/compose.yaml keeps the shared signing key (a named volume takes
# the directory's owner, so the kiln user can create the key there).
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin kiln \
 && mkdir -p /opt/kiln /var/cache/kiln /etc/kiln/signing \
 && chown kiln:kiln /opt/kiln /var/cache/kiln /etc/kiln/signing
WORKDIR /opt/kiln
COPY --chown=kiln:kiln . /opt/kiln
USER kiln

ENV KILN_BOOTSTRAP_APT=0 \
    KILN_VENV=/opt/kiln/.venv \
    KILN_EXTRAS=server
RUN scripts/bootstrap.sh

ENV PATH=/opt/kiln/.venv/bin:$PATH \
    KILN_HOST=0.0.0.0 \
    KILN_PORT=8000 \
    KILN_CACHE_DIR=/var/cache/kiln
VOLUME ["/var/cache/kiln"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)" || exit 1
# SIGTERM (docker stop): stop accepting, finish in-flight requests (KILN_SHUTDOWN_TIMEOUT), stop
# the workers. docker stop's default 10 s grace is short for long compiles: use --time.
STOPSIGNAL SIGTERM
CMD ["kiln", "serve"]
