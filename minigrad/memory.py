"""Memory you can measure: the bytes that live graphs hold for backward, and all the bytes alive.

A graph keeps alive every tensor its nodes saved until backward frees them (or the graph is
dropped). ``saved_bytes()`` adds up the memory behind those saved tensors now — each storage once,
however many views of it were saved, and however many nodes saved it — which is what torch's
``saved_tensors_hooks`` would see (``SavedBytes`` measures torch that way, for comparison).

The record starts when first asked for: the first call finds the saved tensors alive at that
moment, and from then on every save and every release is counted, so ``peak_saved_bytes()`` is
the most held at once since then (or since ``reset_peak()``). Until then, saving costs nothing extra.

``LiveBytes`` counts everything instead, as an allocator does: every storage that ops make on a
device, from the op that made it until its last tensor dies — activations, gradients, input
buffers, temporaries of a backward formula. Its ``peak`` around ``backward()`` is the figure that
``torch.cuda.max_memory_allocated()`` gives on a GPU, and it runs anywhere: on the CPU, or on
torch's ``meta`` device (tensors with shapes and no data), which stands in for CUDA without one.
"""
import gc
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from . import saved_tensors
from .tensor import Tensor

__all__ = ["LiveBytes", "SavedBytes", "cuda_allocated", "peak_saved_bytes", "reset_peak", "saved_bytes"]


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

    def moved(self, saved):
        """``saved`` holds other storages now (an in-place op's saved output: ``saved_output_is``);
        a weak reference equals another while their entry lives, so it finds the old record."""
        self._release(weakref.ref(saved))
        self.add(saved)


def _ledger():
    """The record, started (from the saved tensors alive now) the first time it is needed."""
    if saved_tensors._ledger is None:
        ledger = _Ledger()
        for obj in gc.get_objects():
            if type(obj) in (saved_tensors.SavedTensor, saved_tensors.PackedTensor) and _made(obj):
                ledger.add(obj)
        saved_tensors._ledger = ledger
    return saved_tensors._ledger


def _made(saved):
    """Whether a saved entry was made whole: one whose pack hook raised is in no graph, but the
    error's traceback can keep it alive, and gc finds it."""
    return not isinstance(saved, saved_tensors.PackedTensor) or hasattr(saved, "packed")


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


class LiveBytes(TorchDispatchMode):
    """The bytes of tensor storage alive on ``device`` (every device if None), counted as an allocator
    counts them: ``with LiveBytes("meta") as live: ...`` then ``live.current`` and ``live.peak``.

    Every torch op runs through it (torch's own and minigrad's alike, minigrad's storage being
    torch's, and the ops of torch's backward engine too): a storage an op returns that was not seen
    before is counted from then on, once however many tensors view it, until its last tensor dies
    (a finalizer on the storage, which torch keeps as one Python object per storage). A storage first
    seen as an op's input was made before (or by ``torch.tensor(data)``, as minigrad wraps a Python
    number, where torch wraps it without making a tensor): it is not counted. Nor is memory a kernel
    uses inside itself (CUDA's cuBLAS workspace), which ``torch.cuda.memory_allocated`` does count.
    ``reset_peak()`` starts a new peak from what is alive now, e.g. right before ``backward()``.
    """

    def __init__(self, device=None):
        super().__init__()
        self.device = None if device is None else torch.device(device)
        self.current = self.peak = 0
        self._counted = {}  # id of a storage alive -> its bytes (0: made before, not counted)

    def reset_peak(self):
        self.peak = self.current

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for tensor in tree_leaves((args, kwargs)):
            if isinstance(tensor, torch.Tensor):
                self._see(tensor, made_here=False)
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self._see(tensor, made_here=True)
        return out

    def _see(self, tensor, made_here):
        if tensor.layout != torch.strided or not self._on_device(tensor.device):
            return
        storage = tensor.untyped_storage()
        key = id(storage)
        if key in self._counted:
            return
        size = self._counted[key] = storage.nbytes() if made_here else 0
        weakref.finalize(storage, self._free, key)
        self.current += size
        self.peak = max(self.peak, self.current)

    def _on_device(self, device):
        """Whether ``device`` is counted: "cuda" counts every CUDA device, "cuda:1" only that one."""
        wanted = self.device
        return wanted is None or (device.type == wanted.type and wanted.index in (None, device.index))

    def _free(self, key):
        self.current -= self._counted.pop(key)
