"""Which device an exercise's checks run on while grading: the same for torch's run (the expected
results) and the learner's (in the sandbox), CUDA where both can use it.

The exercises' setup cells choose ``DEVICE = "cuda" if torch.cuda.is_available() else "cpu"``, and
exercise 9 Triton's interpreter where there is no GPU. A sandbox that cannot reach the machine's
GPU would run the learner's code on the CPU against results torch computed on CUDA: a right answer
on cpu against torch's on cuda:0 loses. So where the sandbox cannot use the GPU, torch's run does
not see it either (``CUDA_VISIBLE_DEVICES=""``), and the record says so ("checked on CPU: ...").
"""
import functools
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import torch

PROBE = "import torch; x = torch.ones(2, device='cuda'); print(int((x + x).sum().item()), torch.cuda.get_device_name(0))"
"""What the sandbox must manage for CUDA to count as usable there: initialise it, and compute on it."""


@dataclass(frozen=True)
class Device:
    name: str         # "cuda" or "cpu": what the setup cells' DEVICE will be, in both runs
    description: str  # for the record, ``status`` and the feedback

    def environment(self):
        """Variables for torch's run, so that it sees the device the learner's run sees."""
        return {} if self.name == "cuda" else {"CUDA_VISIBLE_DEVICES": ""}


def choose(host, sandbox):
    """The device for a machine whose GPU is ``host`` (its name; None: no usable CUDA device) and
    whose sandbox sees ``sandbox`` (the same, from inside)."""
    if host is None:
        return Device("cpu", "CPU (no CUDA device on the grading machine)")
    if sandbox is None:
        return Device("cpu", f"CPU (checked on CPU: no CUDA device in the sandbox, though the machine has a {host})")
    return Device("cuda", f"CUDA ({sandbox})")


@functools.cache
def grading_device(sandboxed):
    """This machine's grading device (cached: probing the sandbox costs a start of torch there)."""
    host = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return choose(host, sandbox_gpu() if host and sandboxed else host)


def sandbox_gpu():
    """The GPU's name as a sandboxed process sees it, or None where CUDA does not work there."""
    from .sandbox import wrap

    with tempfile.TemporaryDirectory() as work:
        try:
            done = subprocess.run(wrap([sys.executable, "-c", PROBE], work), capture_output=True, text=True,
                                  timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
    answer, _, name = done.stdout.strip().partition(" ")
    return name if done.returncode == 0 and answer == "4" and name else None
