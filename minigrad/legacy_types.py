"""torch's legacy tensor types, a dtype and a device type under one old name: ``torch.FloatTensor``
(float32 on the CPU), ``torch.cuda.IntTensor`` (int32 on CUDA), ... Each answers as the torch type of
the same name, asked about a minigrad tensor's storage: ``isinstance(x, torch.FloatTensor)``,
``torch.FloatTensor.dtype``, and calling it makes a tensor as torch's legacy constructor does (from
sizes or data; no argument: an empty one). ``Tensor.type`` converts to one."""
from .creation import _new
from .tensor import Tensor


class LegacyTensorType(type):
    """The class of the legacy types (torch's ``torch.tensortype``)."""

    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and isinstance(instance._data, cls._torch_type)

    def __call__(cls, *args, **kwargs):
        return _new(cls._torch_type(*args, **kwargs), False)

    @property
    def dtype(cls):
        return cls._torch_type.dtype

    @property
    def is_cuda(cls):
        return cls._torch_type.is_cuda


def types_of(torch_module, module_name):
    """``{name: type}``: the legacy types ``torch_module`` (torch or torch.cuda) has for minigrad's dtypes
    (and uint8's ByteTensor), each standing for the torch type of that name, to live in ``module_name``."""
    names = [f"{kind}Tensor" for kind in ("Double", "Float", "Half", "Long", "Int", "Byte", "Bool")]
    return {name: LegacyTensorType(name, (), {"_torch_type": getattr(torch_module, name), "__module__": module_name})
            for name in names}
