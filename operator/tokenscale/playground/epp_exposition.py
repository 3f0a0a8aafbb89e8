"""The endpoint picker's flow-control gauges for one InferencePool, as the Gateway API Inference
Extension's endpoint picker writes them (``pkg/epp/metrics``; llm-d's router exports the same
under ``llm_d_epp_``, and the operator reads either: ``metrics/promql.py``).

``inference_extension_flow_control_queue_size{fairness_id, priority, inference_pool,
model_name, target_model_name}``: requests held by flow control;
``inference_extension_flow_control_pool_saturation{inference_pool}``: the pool's saturation
(1.0: flow control holds requests). The playground's gateway twin and the tests' emulator
serve it; the values come from a callable read at each scrape.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

QUEUE_SIZE = "inference_extension_flow_control_queue_size"
POOL_SATURATION = "inference_extension_flow_control_pool_saturation"


@dataclass(frozen=True)
class PoolReading:
    """What the picker knows of its pool at one scrape."""

    queued: int
    saturation: float


class EndpointPickerCollector(Collector):
    """The two gauges for ``pool`` (the default fairness id and priority, one model)."""

    def __init__(self, pool: str, model: str, read: Callable[[], PoolReading]) -> None:
        self.pool = pool
        self.model = model
        self.read = read

    def collect(self) -> Iterator[Metric]:
        r = self.read()
        queue = Metric(QUEUE_SIZE, "Requests held in the Flow Control queue.", "gauge")
        queue.add_sample(
            QUEUE_SIZE,
            {
                "fairness_id": "default",
                "priority": "0",
                "inference_pool": self.pool,
                "model_name": self.model,
                "target_model_name": self.model,
            },
            float(r.queued),
        )
        yield queue
        sat = Metric(POOL_SATURATION, "Saturation of the inference pool.", "gauge")
        sat.add_sample(POOL_SATURATION, {"inference_pool": self.pool}, float(r.saturation))
        yield sat
