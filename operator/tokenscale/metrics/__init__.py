"""Reading vLLM metrics: the MetricsSource protocol and its Prometheus implementation."""

from tokenscale.metrics.prometheus import PrometheusConfig, PrometheusSource
from tokenscale.metrics.source import MetricsSource, ServiceKey

__all__ = ["MetricsSource", "PrometheusConfig", "PrometheusSource", "ServiceKey"]
