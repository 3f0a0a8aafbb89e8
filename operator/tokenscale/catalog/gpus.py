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

# GPU-to-GPU link (``interconnectGBps``, else ``pcieGBps``): datasheets quote both directions
# together; KV transfers and ring all-reduces use half, one way (planning/performance.py,
# ``link_bytes_per_s``).
_NVLINK3 = (
    "; link: NVLink 3, 12 links x 50 GB/s = interconnectGBps 600 both directions (datasheet "
    "'NVLink: 600GB/s'), 300 GB/s each way"
)
_NVLINK4 = (
    "; link: NVLink 4, 18 links x 50 GB/s = interconnectGBps 900 both directions (datasheet "
    "'NVLink: 900GB/s'), 450 GB/s each way"
)
_NVLINK5 = (
    "; link: NVLink 5, 18 links x 100 GB/s = interconnectGBps 1,800 both directions (datasheet "
    "'NVLink: 1.8TB/s'), 900 GB/s each way"
)
_XGMI = (
    "; link: seven Infinity Fabric links x 128 GB/s = interconnectGBps 896 both directions, "
    "448 GB/s each way over all seven (one pair of GPUs shares one link: 64 GB/s each way, "
    "not modelled)"
)
_PCIE4 = (
    "; link: no NVLink, PCIe Gen4 x16 = pcieGBps 64 both directions (datasheet 'PCIe Gen4: "
    "64GB/s'), 32 GB/s each way"
)
_PCIE5 = (
    "; link: PCIe Gen5 x16 = pcieGBps 128 both directions (datasheet 'PCIe Gen5: 128GB/s'), "
    "64 GB/s each way (the optional NVLink bridge between a pair is not modelled)"
)

GPU_CATALOG: dict[str, GpuEntry] = {
    e.key: e
    for e in (
        _gpu(
            "A100-SXM-40GB",
            _NVIDIA_A100 + _DGX_A100_NIC + _NVLINK3,
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
            _NVIDIA_A100 + _DGX_A100_NIC + _NVLINK3,
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
            _NVIDIA_H100 + _DGX_H100_NIC + _NVLINK4,
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
            _NVIDIA_H100 + ", PCIe column" + _PCIE5,
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
            "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM column" + _DGX_H200_NIC + _NVLINK4,
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
            "NVIDIA DGX B200 / HGX B200 datasheet (2024), per GPU, dense"
            + _DGX_B200_NIC
            + _NVLINK5,
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
            "NVIDIA L40S datasheet (2023), dense" + _PCIE4,
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
            "NVIDIA L4 Tensor Core GPU datasheet (2023), dense" + _PCIE4,
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
            "NVIDIA A10 Tensor Core GPU datasheet (2021), dense" + _PCIE4,
            name="NVIDIA A10",
            memoryGiB=22.49,
            hbmBandwidthGBps=600,
            bf16Tflops=125,
            int8Tops=250,
            productLabel="NVIDIA-A10",
        ),
        _gpu(
            "MI300X-192GB",
            "AMD Instinct MI300X data sheet (2023), dense" + _MI300X_NIC + _XGMI,
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
        _gpu(
            "A100-PCIE-80GB",
            "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB PCIe column: 1,935 GB/s, "
            "312 TFLOPS BF16 dense, NVLink bridge for 2 GPUs 600 GB/s, PCIe Gen4 64 GB/s; "
            "memory as the 80 GB SXM reports it" + _PCIE4,
            name="NVIDIA A100 80GB PCIe",
            memoryGiB=79.15,
            hbmBandwidthGBps=1935,
            bf16Tflops=312,
            int8Tops=624,
            pcieGBps=64,
            productLabel="NVIDIA-A100-80GB-PCIe",
        ),
        _gpu(
            "H100-NVL-94GB",
            "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 NVL column: 94 GB, 3.9 TB/s, "
            "BF16 1,671 / FP8 3,341 TFLOPS with sparsity (halved here), NVLink bridge 600 GB/s "
            "between a pair, PCIe Gen5 128 GB/s; memory 94 GB less the same 0.82 GiB the "
            "80 GB H100 reports below its nominal size" + _PCIE5,
            name="NVIDIA H100 NVL",
            memoryGiB=93.18,
            hbmBandwidthGBps=3900,
            bf16Tflops=835.5,
            fp8Tflops=1670.5,
            int8Tops=1670.5,
            pcieGBps=128,
            productLabel="NVIDIA-H100-NVL",
        ),
        _gpu(
            "GH200-96GB",
            "NVIDIA GH200 Grace Hopper Superchip datasheet (2023), 96 GB HBM3 version: 4 TB/s, "
            "FP8 3,958 / BF16 1,979 TFLOPS with sparsity (halved here); one GPU per superchip "
            "node (set spec.hardware.gpusPerNode: 1), nodes joined over the network; memory 96 "
            "less the 0.82 GiB the 80 GB H100 reports below its nominal size; link: none to "
            "another GPU in the node (NVLink-C2C joins the Grace CPU), the default pcieGBps 64 "
            "both directions, 32 GB/s each way, is never used at one GPU per node",
            name="NVIDIA GH200 480GB",
            memoryGiB=95.18,
            hbmBandwidthGBps=4000,
            bf16Tflops=989,
            fp8Tflops=1979,
            int8Tops=1979,
            productLabel="NVIDIA-GH200-480GB",
        ),
        _gpu(
            "H20-96GB",
            "NVIDIA H20 (HGX H20, China market) as published by resellers and cloud providers, "
            "no public NVIDIA datasheet: 96 GB HBM3, 4.0 TB/s, 148 TFLOPS FP16/BF16, 296 TFLOPS "
            "FP8/INT8 dense, NVLink 900 GB/s; memory 96 less the 0.82 GiB the 80 GB H100 reports "
            "below its nominal size" + _NVLINK4,
            name="NVIDIA H20",
            memoryGiB=95.18,
            hbmBandwidthGBps=4000,
            bf16Tflops=148,
            fp8Tflops=296,
            int8Tops=296,
            interconnectGBps=900,
            productLabel="NVIDIA-H20",
        ),
        _gpu(
            "L40-48GB",
            "NVIDIA L40 datasheet (2022): 48 GB GDDR6, 864 GB/s, BF16 181.05 / FP8 362 TFLOPS "
            "dense, PCIe Gen4 x16 64 GB/s; memory as the L40S reports it (the same board)" + _PCIE4,
            name="NVIDIA L40",
            memoryGiB=44.99,
            hbmBandwidthGBps=864,
            bf16Tflops=181.05,
            fp8Tflops=362,
            int8Tops=362,
            pcieGBps=64,
            productLabel="NVIDIA-L40",
        ),
        _gpu(
            "MI325X-256GB",
            "AMD Instinct MI325X data sheet (2024), dense: 256 GB HBM3E, 6 TB/s, BF16 1,307.4 / "
            "FP8 2,614.9 TFLOPS, seven Infinity Fabric links per GPU (896 GB/s as the MI300X); "
            "memory as the MI300X's ratio of reported (191.98 GiB) to nominal"
            + _MI300X_NIC
            + _XGMI,
            name="AMD Instinct MI325X",
            interNodeGBps=50,
            memoryGiB=255.97,
            hbmBandwidthGBps=6000,
            bf16Tflops=1307.4,
            fp8Tflops=2614.9,
            int8Tops=2614.9,
            interconnectGBps=896,
            resourceName="amd.com/gpu",
        ),
    )
}
