"""``minigrad.autograd``: backward() and grad(), checked and prepared as torch.autograd does, and
what torch.autograd offers around them: custom Functions, gradcheck, saved-tensor hooks, anomaly mode,
``Variable`` (torch's old name of Tensor, and its engine handle for final callbacks), and
``SavedTensor``, the class of ``grad_fn._raw_saved_*``."""
from ..grad_mode import (enable_grad, inference_mode, is_multithreading_enabled, no_grad, set_grad_enabled,
                         set_multithreading_enabled)
from ..saved_tensors import RawSaved as SavedTensor  # noqa: F401 - torch.autograd's, not in its __all__
from . import function, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .api import backward, grad, prepare_backward
from .function import Function
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = ["Function", "Variable", "backward", "detect_anomaly", "enable_grad", "function", "grad", "gradcheck",
           "gradgradcheck", "graph", "inference_mode", "is_multithreading_enabled", "no_grad", "prepare_backward",
           "set_detect_anomaly", "set_grad_enabled", "set_multithreading_enabled"]
