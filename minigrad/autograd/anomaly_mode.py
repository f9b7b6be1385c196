"""Anomaly detection (``torch.autograd.detect_anomaly``): each node remembers where the forward
made it, an error in backward is reported with that place, and with ``check_nan`` backward fails
at the first node that returns NaN."""
import warnings

from ..grad_mode import anomaly


def is_anomaly_enabled():
    return anomaly.enabled


def is_anomaly_check_nan_enabled():
    return anomaly.check_nan


class detect_anomaly:
    """A context manager (and decorator) that turns anomaly detection on, as torch's does."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._previous = anomaly.enabled, anomaly.check_nan
        anomaly.enabled, anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc):
        anomaly.enabled, anomaly.check_nan = self._previous

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off where it is called; as a context manager, restores it after."""

    def __init__(self, mode, check_nan=True):
        self._previous = anomaly.enabled, anomaly.check_nan
        anomaly.enabled, anomaly.check_nan = mode, check_nan

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        anomaly.enabled, anomaly.check_nan = self._previous
