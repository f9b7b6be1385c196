"""``minigrad.nn``: the modules, functions and utilities the course's tutorials use, with torch's names."""
from . import functional, init, utils
from .activation import GELU, ReLU, Sigmoid, Tanh
from .attention import MultiheadAttention
from .container import ModuleList, Sequential
from .dropout import Dropout
from .linear import Linear
from .loss import CrossEntropyLoss, L1Loss, MSELoss
from .module import Module, Parameter
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = ["functional", "init", "utils", "CrossEntropyLoss", "Dropout", "Embedding", "GELU", "L1Loss", "LayerNorm",
           "Linear", "Module", "ModuleList", "MSELoss", "MultiheadAttention", "Parameter", "ReLU", "Sequential",
           "Sigmoid", "Tanh"]
