"""``minigrad.nn``: the few modules the course's forum snippets use."""
from . import functional
from .modules import L1Loss, Linear, Module, MSELoss, Parameter

__all__ = ["functional", "L1Loss", "Linear", "Module", "MSELoss", "Parameter"]
