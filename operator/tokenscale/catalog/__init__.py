"""Built-in GPUs and model architectures, and the HF ``config.json`` loader. Pure data."""

from tokenscale.catalog.gpus import GPU_CATALOG, GpuEntry
from tokenscale.catalog.hf_config import architecture_from_hf_config, weight_dtype_from_hf_config
from tokenscale.catalog.models import MODEL_CATALOG, ModelEntry, find_model
from tokenscale.catalog.params import ParamCount, count_params

__all__ = [
    "GPU_CATALOG",
    "MODEL_CATALOG",
    "GpuEntry",
    "ModelEntry",
    "ParamCount",
    "architecture_from_hf_config",
    "count_params",
    "find_model",
    "weight_dtype_from_hf_config",
]
