"""``minigrad.utils``: gradient checkpointing and hook handles, as in ``torch.utils``."""
