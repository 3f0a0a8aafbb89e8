"""Build the API client once at start-up: a kubeconfig file, else the in-cluster account."""

from typing import cast

from kubernetes import client, config
from kubernetes.client import rest

CONNECTIONS = 32
"""Kept-alive connections to the API server: one per thread that may call it (Kopf's 16
handler threads, the resync loop's and the event posters'). The client's default (five per
core: 10 on two cores) discarded the surplus connections under a create wave, and each
discarded one cost a new TLS handshake on both ends."""


def connect(kubeconfig: str | None) -> client.ApiClient:
    api = _client(kubeconfig)
    api.configuration.connection_pool_maxsize = CONNECTIONS
    api.rest_client = rest.RESTClientObject(api.configuration)
    return api


def _client(kubeconfig: str | None) -> client.ApiClient:
    if kubeconfig:
        return cast(
            client.ApiClient,
            config.new_client_from_config(config_file=kubeconfig),  # type: ignore[no-untyped-call]
        )
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        return cast(client.ApiClient, config.new_client_from_config())  # type: ignore[no-untyped-call]
    return client.ApiClient()


def bearer_token(api: client.ApiClient) -> str | None:
    cfg = api.configuration
    raw = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
    if not raw:
        return None
    return str(raw).removeprefix("Bearer ").strip() or None
