"""Training past one process: `accelerate launch` with 2 CPU processes (gloo) gives the same adapter as one
process on the same data, when the global batch is the same (2 processes x 2 rows = 1 process x 4 rows).

Both runs are real: `accelerate launch` starts two `training.train_lora` processes that meet over gloo on
127.0.0.1 (ACCELERATE_USE_CPU makes accelerate choose its multi-CPU mode; on GPUs the same command without it
runs one process per GPU), and the single run is a plain `python -m training.train_lora`. Each process of the
pair sees half of every global batch (accelerate shards the seeded sampler's batches) and gradients are averaged
across them, so the steps are the single run's steps up to floating-point summation order."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("peft")

from helpers.rollout_sets import click, write_rollout_set  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _weights(folder: Path) -> dict[str, object]:
    from safetensors.torch import load_file
    return load_file(str(folder / "adapter" / "adapter_model.safetensors"))


@pytest.mark.slow
def test_two_cpu_processes_train_the_same_adapter_as_one(tiny_base, tmp_path):
    data = write_rollout_set(tmp_path / "rollouts", {f"t{i}": [(click(14 if i % 2 else 70, 42), 1.0)] * 2
                                                     for i in range(8)})  # 16 rows, every one rewarded
    common = [f"model.path={tiny_base}", f"data.path={data}", "convert.merge=false", "convert.gguf=false",
              "train.max_steps=4", "train.short_prompt_steps=0", "train.eval_generate=0",
              "train.early_stop_hits=null", "data.eval_fraction=0", "eval.size=null", "train.max_seconds=null"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "ACCELERATE_USE_CPU": "true",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
              "--main_process_ip", "127.0.0.1", "--main_process_port", str(_free_port())]
    two = subprocess.run([*launch, "-m", "training.train_lora", "--recipe", "tiny_cpu", "--quiet", *common,
                          f"output.dir={tmp_path / 'two'}", "train.batch_size=2"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    one = subprocess.run([sys.executable, "-m", "training.train_lora", "--recipe", "tiny_cpu", "--quiet", *common,
                          f"output.dir={tmp_path / 'one'}", "train.batch_size=4"],
                         cwd=REPO, env={k: v for k, v in env.items() if k != "ACCELERATE_USE_CPU"},
                         capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]

    a, b = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    assert set(a) == set(b)
    lora = [k for k in a if "lora_B" in k]
    assert lora and max(float(a[k].abs().max()) for k in lora) > 1e-4  # the adapter moved from its zero start
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5
