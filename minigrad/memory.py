"""Memory you can measure: the bytes that live graphs hold for backward.

A graph keeps alive every tensor its nodes saved until backward frees them (or the graph is
dropped). ``saved_bytes()`` adds up the memory behind those saved tensors now — each storage once,
however many views of it were saved, and however many nodes saved it — which is what torch's
``saved_tensors_hooks`` would see (``SavedBytes`` measures torch that way, for comparison).

The record starts when first asked for: the first call finds the saved tensors alive at that
moment, and from then on every save and every release is counted, so ``peak_saved_bytes()`` is
the most held at once since then (or since ``reset_peak()``). Until then, saving costs nothing extra.
"""
import gc
import weakref

import torch

from . import function
from .tensor import Tensor

__all__ = ["SavedBytes", "cuda_allocated", "peak_saved_bytes", "reset_peak", "saved_bytes"]


class _Storages:
    """Storages counted once each, however many saved entries hold them; the running total and its peak."""

    def __init__(self):
        self.held = {}  # (device, address) -> [holders, bytes]
        self.current = self.peak = 0

    def hold(self, data):
        storage = data.untyped_storage()
        key = (data.device, storage.data_ptr())
        held = self.held.get(key)
        if held is None:
            held = self.held[key] = [0, storage.nbytes()]
            self.current += held[1]
            self.peak = max(self.peak, self.current)
        held[0] += 1
        return key

    def drop(self, key):
        held = self.held[key]
        held[0] -= 1
        if held[0] == 0:
            self.current -= held[1]
            del self.held[key]


class _Ledger(_Storages):
    """minigrad's own record: every saved entry, released when the graph lets go of it."""

    def __init__(self):
        super().__init__()
        self.entries = {}  # weak reference to a saved entry -> the storage keys it holds

    def add(self, saved):
        keys = [self.hold(storage) for storage in saved.storages()]
        if keys:
            self.entries[weakref.ref(saved, self._release)] = keys

    def _release(self, reference):
        for key in self.entries.pop(reference, ()):
            self.drop(key)


def _ledger():
    """The record, started (from the saved tensors alive now) the first time it is needed."""
    if function._ledger is None:
        ledger = _Ledger()
        for obj in gc.get_objects():
            if type(obj) in (function.SavedTensor, function.PackedTensor) and _made(obj):
                ledger.add(obj)
        function._ledger = ledger
    return function._ledger


def _made(saved):
    """Whether a saved entry was made whole: one whose pack hook raised is in no graph, but the
    error's traceback can keep it alive, and gc finds it."""
    return not isinstance(saved, function.PackedTensor) or hasattr(saved, "packed")


def saved_bytes():
    """Bytes of the storages that live graphs keep for backward now."""
    return _ledger().current


def peak_saved_bytes():
    """The most ``saved_bytes()`` has been since the record started or since ``reset_peak()``."""
    return _ledger().peak


def reset_peak():
    ledger = _ledger()
    ledger.peak = ledger.current


def cuda_allocated(device=None):
    """``torch.cuda.memory_allocated``: all of CUDA memory torch's allocator hands out (saved
    tensors, parameters, gradients, everything), to read beside ``saved_bytes()``; 0 without CUDA."""
    return torch.cuda.memory_allocated(device) if torch.cuda.is_available() else 0


class SavedBytes(_Storages):
    """Measures what a library's graphs save while in force, through its saved-tensor hooks:
    ``with SavedBytes(torch) as saved: ...`` then ``saved.current`` and ``saved.peak`` (bytes, each
    storage once). Works for torch and for minigrad alike; the hooks keep a detached reference to
    each saved tensor, which they give back to backward."""

    def __init__(self, lib):
        super().__init__()
        self.lib = lib

    def __enter__(self):
        self._hooks = self.lib.autograd.graph.saved_tensors_hooks(self._pack, _Held.unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)

    def _pack(self, tensor):
        return _Held(self, self.hold(tensor._data if isinstance(tensor, Tensor) else tensor), tensor.detach())


class _Held:
    """What SavedBytes's pack hook gives the graph: the tensor, and a note to take it off the count
    when the graph lets go of it."""

    def __init__(self, counter, key, tensor):
        self.counter, self.key, self.tensor = counter, key, tensor

    def unpack(self):
        return self.tensor

    def __del__(self):
        self.counter.drop(self.key)
