"""Built-in GPU catalog. Dense peaks (no sparsity) from vendor datasheets.

``memoryGiB`` is what the CUDA/ROCm runtime reports as total device memory (what vLLM
multiplies by ``gpu_memory_utilization``), which is below the marketing "GB" figure and below
what ``nvidia-smi`` lists: vLLM start-up logs report 79.18 GiB for an "80GB" H100
(``Free memory on device (78.57/79.18 GiB)``), 79.15 GiB for an 80 GB A100
(``total_gpu_memory=79.15GiB``), 139.80 GiB for an H200 (``total_gpu_memory=139.80GiB``) and
PyTorch 39.39 GiB for a 40 GB A100; the other entries are ``nvidia-smi`` MiB ÷ 1024.
Bandwidth is in GB/s (1e9 bytes/s).
"""

from dataclasses import dataclass

from tokenscale.api.hardware import GpuSpec


@dataclass(frozen=True)
class GpuEntry:
    """A catalog GPU: its figures and where they come from."""

    key: str
    spec: GpuSpec
    source: str


def _gpu(key: str, source: str, **fields: object) -> GpuEntry:
    return GpuEntry(key=key, spec=GpuSpec.model_validate(fields), source=source)


_NVIDIA_A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM4 column"
_NVIDIA_H100 = "NVIDIA H100 Tensor Core GPU datasheet (2023), dense figures (sparsity halved)"

# Node-to-node bandwidth per GPU (``interNodeGBps``): the reference 8-GPU servers give each GPU
# its own RDMA NIC, so the per-GPU figure is one NIC's line rate in bytes (Gb/s ÷ 8).
_DGX_A100_NIC = (
    "; interNodeGBps: NVIDIA DGX A100 datasheet, 'Networking: 8x Single-Port Mellanox ConnectX-6 "
    "VPI 200Gb/s HDR InfiniBand' = 25 GB/s per GPU"
)
_DGX_H100_NIC = (
    "; interNodeGBps: NVIDIA DGX H100 datasheet, 'Networking: 4x OSFP ports serving 8x "
    "single-port NVIDIA ConnectX-7 VPI, up to 400Gb/s InfiniBand/Ethernet' = 50 GB/s per GPU"
)
_DGX_H200_NIC = (
    "; interNodeGBps: NVIDIA DGX H200 datasheet, 8x single-port NVIDIA ConnectX-7 VPI, up to "
    "400Gb/s InfiniBand/Ethernet = 50 GB/s per GPU"
)
_DGX_B200_NIC = (
    "; interNodeGBps: NVIDIA DGX B200 datasheet, 'Networking: 4x OSFP ports serving 8x "
    "single-port NVIDIA ConnectX-7 VPI, up to 400Gb/s InfiniBand/Ethernet' = 50 GB/s per GPU"
)
_MI300X_NIC = (
    "; interNodeGBps: AMD Instinct MI300X platform guides pair each GPU with one 400 Gb/s "
    "RoCE NIC (e.g. AMD Pensando Pollara 400) = 50 GB/s per GPU"
)

GPU_CATALOG: dict[str, GpuEntry] = {
    e.key: e
    for e in (
        _gpu(
            "A100-SXM-40GB",
            _NVIDIA_A100 + _DGX_A100_NIC,
            name="NVIDIA A100-SXM4-40GB",
            interNodeGBps=25,
            memoryGiB=39.39,
            hbmBandwidthGBps=1555,
            bf16Tflops=312,
            int8Tops=624,
            interconnectGBps=600,
            productLabel="NVIDIA-A100-SXM4-40GB",
        ),
        _gpu(
            "A100-SXM-80GB",
            _NVIDIA_A100 + _DGX_A100_NIC,
            name="NVIDIA A100-SXM4-80GB",
            interNodeGBps=25,
            memoryGiB=79.15,
            hbmBandwidthGBps=2039,
            bf16Tflops=312,
            int8Tops=624,
            interconnectGBps=600,
            productLabel="NVIDIA-A100-SXM4-80GB",
        ),
        _gpu(
            "H100-SXM-80GB",
            _NVIDIA_H100 + _DGX_H100_NIC,
            name="NVIDIA H100 80GB HBM3",
            interNodeGBps=50,
            memoryGiB=79.18,
            hbmBandwidthGBps=3350,
            bf16Tflops=989,
            fp8Tflops=1979,
            int8Tops=1979,
            interconnectGBps=900,
            productLabel="NVIDIA-H100-80GB-HBM3",
        ),
        _gpu(
            "H100-PCIE-80GB",
            _NVIDIA_H100 + ", PCIe column",
            name="NVIDIA H100 PCIe",
            memoryGiB=79.18,
            hbmBandwidthGBps=2000,
            bf16Tflops=756,
            fp8Tflops=1513,
            int8Tops=1513,
            pcieGBps=128,
            productLabel="NVIDIA-H100-PCIe",
        ),
        _gpu(
            "H200-SXM-141GB",
            "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM column" + _DGX_H200_NIC,
            name="NVIDIA H200",
            interNodeGBps=50,
            memoryGiB=139.8,
            hbmBandwidthGBps=4800,
            bf16Tflops=989,
            fp8Tflops=1979,
            int8Tops=1979,
            interconnectGBps=900,
            productLabel="NVIDIA-H200",
        ),
        _gpu(
            "B200-180GB",
            "NVIDIA DGX B200 / HGX B200 datasheet (2024), per GPU, dense" + _DGX_B200_NIC,
            name="NVIDIA B200",
            interNodeGBps=50,
            memoryGiB=179.1,
            hbmBandwidthGBps=8000,
            bf16Tflops=2250,
            fp8Tflops=4500,
            int8Tops=4500,
            interconnectGBps=1800,
            productLabel="NVIDIA-B200",
        ),
        _gpu(
            "L40S-48GB",
            "NVIDIA L40S datasheet (2023), dense",
            name="NVIDIA L40S",
            memoryGiB=44.99,
            hbmBandwidthGBps=864,
            bf16Tflops=362,
            fp8Tflops=733,
            int8Tops=733,
            productLabel="NVIDIA-L40S",
        ),
        _gpu(
            "L4-24GB",
            "NVIDIA L4 Tensor Core GPU datasheet (2023), dense",
            name="NVIDIA L4",
            memoryGiB=22.49,
            hbmBandwidthGBps=300,
            bf16Tflops=121,
            fp8Tflops=242,
            int8Tops=242,
            productLabel="NVIDIA-L4",
        ),
        _gpu(
            "A10-24GB",
            "NVIDIA A10 Tensor Core GPU datasheet (2021), dense",
            name="NVIDIA A10",
            memoryGiB=22.49,
            hbmBandwidthGBps=600,
            bf16Tflops=125,
            int8Tops=250,
            productLabel="NVIDIA-A10",
        ),
        _gpu(
            "MI300X-192GB",
            "AMD Instinct MI300X data sheet (2023), dense" + _MI300X_NIC,
            name="AMD Instinct MI300X",
            interNodeGBps=50,
            memoryGiB=191.98,
            hbmBandwidthGBps=5300,
            bf16Tflops=1307,
            fp8Tflops=2615,
            int8Tops=2615,
            interconnectGBps=896,
            resourceName="amd.com/gpu",
        ),
    )
}
