"""``minigrad.optim``: torch's SGD and Adam, on minigrad parameters."""
from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "Optimizer", "SGD"]
