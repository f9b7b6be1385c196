"""A small stand-in for what tests/engine/upstream/test_autograd.py needs of PyTorch's test utilities
(``torch.testing._internal.common_utils`` and ``common_device_type``), written for minigrad.

Verdicts never come from torch's autograd: ``assertEqual`` compares values on storage (the plain
``torch.Tensor`` a minigrad tensor holds, or a detached torch tensor when the file runs with torch
itself, ``UPSTREAM_LIBRARY=torch``), with torch.testing's default tolerances for each dtype.
"""
import contextlib
import functools
import gc
import inspect
import itertools
import numbers
import unittest
import warnings
import weakref

import torch as _storage_lib
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401 - torch's dispatch modes, for both
# libraries: with minigrad they see the aten ops its kernels run on storage (as checkpoint's context_fn does)

import minigrad

TEST_CUDA = _storage_lib.cuda.is_available()
"""Tests marked for CUDA run where a CUDA device is; elsewhere they are skipped, as upstream."""


def _storage(value):
    """The plain torch tensor behind a tensor of either library, out of any graph."""
    if isinstance(value, minigrad.Tensor):
        return value._data
    return value.detach()


def _is_tensor(value):
    return isinstance(value, (minigrad.Tensor, _storage_lib.Tensor))


class TestCase(unittest.TestCase):
    """unittest's TestCase with torch's comparison of tensors, numbers and sequences of them."""

    def assertEqual(self, actual, expected, msg=None, *, atol=None, rtol=None, exact_dtype=True):
        """Equal as torch's test suite means it: tensors of the same shape (and dtype, unless
        ``exact_dtype=False``) whose values are close (torch.testing's tolerances for their dtype,
        or ``atol``/``rtol``), NaN equal to NaN; a tensor against a number compares each element with
        it; sequences element by element; anything else with ==."""
        if _is_tensor(actual) or _is_tensor(expected):
            self._assert_tensors_equal(actual, expected, msg, atol, rtol, exact_dtype)
        elif isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
            self.assertEqual(len(actual), len(expected), msg)
            for a, e in zip(actual, expected):
                self.assertEqual(a, e, msg, atol=atol, rtol=rtol, exact_dtype=exact_dtype)
        elif isinstance(actual, float) or isinstance(expected, float):
            self._assert_tensors_equal(_storage_lib.tensor(float(actual), dtype=_storage_lib.float64),
                                       _storage_lib.tensor(float(expected), dtype=_storage_lib.float64),
                                       msg, atol, rtol, False)
        else:
            super().assertEqual(actual, expected, msg)

    def _assert_tensors_equal(self, actual, expected, msg, atol, rtol, exact_dtype):
        if actual is None or expected is None:
            self.fail(msg or f"{actual!r} != {expected!r}")
        if isinstance(actual, numbers.Number):
            actual, expected = expected, actual
        a = _storage(actual)
        if isinstance(expected, numbers.Number):
            e = _storage_lib.full_like(a, expected, dtype=_storage_lib.float64 if isinstance(expected, float) and
                                       not a.is_floating_point() else a.dtype)
            exact_dtype = False
        else:
            e = _storage(expected)
        if (atol is None) != (rtol is None):  # torch.testing takes both or neither
            atol, rtol = atol or 0.0, rtol or 0.0
        try:
            _storage_lib.testing.assert_close(a.cpu(), e.cpu(), rtol=rtol, atol=atol, equal_nan=True,
                                              check_dtype=exact_dtype)
        except AssertionError as error:
            raise self.failureException(f"{msg}\n{error}" if msg else str(error)) from None

    def assertNotEqual(self, actual, expected, msg=None, **kwargs):
        try:
            self.assertEqual(actual, expected, **kwargs)
        except self.failureException:
            return
        self.fail(msg or f"{actual!r} == {expected!r}")

    def assertNotWarn(self, fn, msg=""):
        """``fn()`` raises no warning at all."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        self.assertEqual([str(w.message) for w in caught], [], msg)

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex):
        """A warning of ``category`` matching ``regex`` is raised in the block, even if it was
        raised before (torch's warnings that warn once per process are reset first)."""
        with set_warn_always_context(True), self.assertWarnsRegex(category, regex):
            yield


@contextlib.contextmanager
def set_warn_always_context(enabled):
    """Warnings that torch gives once per process are given every time in the block (minigrad's
    set_warn_always is torch's flag, so one switch serves both libraries)."""
    previous = _storage_lib.is_warn_always_enabled()
    _storage_lib.set_warn_always(enabled)
    try:
        yield
    finally:
        _storage_lib.set_warn_always(previous)


@contextlib.contextmanager
def disable_gc():
    """Python's cycle collector off in the block: what dies must die by reference counting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class WeakTensorRef:
    """What ``torch._C._WeakTensorRef`` tells: whether a tensor has died."""

    def __init__(self, tensor):
        self._ref = weakref.ref(tensor)

    def expired(self):
        return self._ref() is None


# --- parametrized and device-type tests ---------------------------------------------------------------

def parametrize(name, values):
    """One test per value of ``name`` (``test_x_name_value``); stacked decorators multiply."""
    def decorate(fn):
        fn.__dict__.setdefault("_parameters", []).insert(0, (name, tuple(values)))
        return fn
    return decorate


def instantiate_parametrized_tests(cls):
    for attr, fn in list(vars(cls).items()):
        parameters = getattr(fn, "_parameters", None)
        if not parameters:
            continue
        delattr(cls, attr)
        names = [name for name, _ in parameters]
        for combination in itertools.product(*(values for _, values in parameters)):
            kwargs = dict(zip(names, combination))
            suffix = "_".join(f"{name}_{value}" for name, value in kwargs.items())
            setattr(cls, f"{attr}_{suffix}", _bound(fn, **kwargs))
    return cls


def _bound(fn, *args, **kwargs):
    @functools.wraps(fn)
    def test(self):
        return fn(self, *args, **kwargs)
    del test.__wrapped__  # unittest must not see fn's parameters
    return test


def dtypes(*types):
    def decorate(fn):
        fn._dtypes = types
        return fn
    return decorate


def floating_types_and(*dtypes):
    """torch's floating dtypes (float32, float64) and ``dtypes``."""
    return (_storage_lib.float32, _storage_lib.float64, *dtypes)


def onlyCUDA(fn):
    fn._only = "cuda"
    return fn


def onlyCPU(fn):
    fn._only = "cpu"
    return fn


def deviceCountAtLeast(count):
    """The test takes the list of devices of its type, and is skipped with fewer than ``count``."""
    def decorate(fn):
        fn._device_count = count
        return fn
    return decorate


def _devices(device_type):
    if device_type == "cpu":
        return ["cpu"]
    return [f"cuda:{i}" for i in range(_storage_lib.cuda.device_count())]


def instantiate_device_type_tests(generic, scope):
    """``GenericCPU`` (and ``GenericCUDA`` where CUDA is) in ``scope``, in place of ``Generic``: each
    test ``test_x(self, device[, dtype])`` (or ``test_x(self)``, which torch runs on each device all the
    same) becomes ``test_x_cpu[_float32]``, as torch names them."""
    del scope[generic.__name__]
    helpers = {k: v for k, v in vars(generic).items() if not k.startswith("test") and not k.startswith("__")}
    for device_type in ["cpu"] + (["cuda"] if TEST_CUDA else []):
        attrs = dict(helpers, device_type=device_type)
        for attr, fn in vars(generic).items():
            if not attr.startswith("test"):
                continue
            for dtype in getattr(fn, "_dtypes", (None,)):
                name = f"{attr}_{device_type}" + ("" if dtype is None else f"_{str(dtype).split('.')[-1]}")
                attrs[name] = _device_test(fn, device_type, dtype)
        name = generic.__name__ + device_type.upper()
        scope[name] = type(name, (TestCase,), attrs)


def _device_test(fn, device_type, dtype):
    only, count = getattr(fn, "_only", None), getattr(fn, "_device_count", None)
    devices = _devices(device_type)
    takes_device = len(inspect.signature(fn).parameters) > 1

    @functools.wraps(fn)
    def test(self):
        if only is not None and only != device_type:
            raise unittest.SkipTest(f"only for {only}")
        if count is not None and len(devices) < count:
            raise unittest.SkipTest(f"fewer than {count} {device_type} devices")
        if not takes_device:  # a test of a device-type class that ignores its device
            return fn(self)
        where = devices if count is not None else device_type
        return fn(self, where) if dtype is None else fn(self, where, dtype)
    del test.__wrapped__
    return test


def run_tests():
    unittest.main()
