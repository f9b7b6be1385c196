"""The losses as modules: each keeps its options and calls its functional form."""
from . import functional as F
from .module import Module


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(Module):
    """Class-index targets; ``weight`` (per class) is kept as it is given, not as a parameter."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)
