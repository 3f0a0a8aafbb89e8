# The tokenscale operator image: slim, non-root, no build tools in the final stage.
#   docker build -t tokenscale/operator:0.1.0 .
FROM python:3.11.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m venv /opt/tokenscale \
 && /opt/tokenscale/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/tokenscale/bin/pip install --no-cache-dir . \
 && find /opt/tokenscale -name '__pycache__' -prune -exec rm -rf {} +

FROM python:3.11.11-slim-bookworm
RUN groupadd --gid 65532 tokenscale \
 && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin tokenscale
COPY --from=build /opt/tokenscale /opt/tokenscale
ENV PATH=/opt/tokenscale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["tokenscale"]
CMD ["run", "--all-namespaces", "--metrics-port", "8080", "--liveness", "http://0.0.0.0:8081/healthz"]
