"""Graded code under run-time guards: what a learner's definitions may reach is decided while they run.

The static check (``graded_code.py``) reads the source and names a forbidden construct
precisely, but it cannot follow an open-ended graph of attributes (``collections._sys``) nor see which
strings a library will evaluate. So the grader also compiles a learner's definitions with
RestrictedPython (``compile_graded``): every attribute read and write, subscript, iteration,
unpacking, import, class statement, ``print`` and augmented assignment becomes a call of a guard,
and the guards (``Guards``, built in the grading process from the exercise's ``policy``) decide at
run time against allowlists:

- **modules**: only those an exercise needs, each with its members: torch's functions the exercise
  uses (``COMMON_TORCH``, ``POLICIES``), ``math``, a few of ``collections``, ``functools``, ``heapq``,
  ``itertools``, ``typing`` (not ``get_type_hints``, which evaluates strings), minigrad's modules
  (not ``minigrad.memory``; nothing of ``coursekit``), Triton's language;
- **objects**: minigrad's own (tensors, nodes, ctx, saved tensors, version counters, modes) and the
  learner's own classes: any attribute but dunders; values read from a minigrad module must be
  minigrad's own, plain data, or an allowed module or torch type. Every other type has its members
  listed (``MEMBERS``: torch tensors, sizes, dtypes, devices, plain data, containers); a caught
  exception shows only ``args``, as plain data; functions, frames, code, generators show nothing;
- **writes**: attributes of the learner's own objects and of a ``ctx``, then only the (class,
  attribute) pairs the exercise's part must set (``POLICIES``: ``_State.grad_enabled`` in exercise
  5, ...), and, on the objects a part keeps its own record on (``records``: a grad mode, a
  checkpoint's frame), attributes of the learner's naming that their class does not define; never
  of a module or a class; items of lists, dicts and tensors;
- **classes**: a learner's class derives only from ``object``, the learner's own classes and the
  bases the exercise names (minigrad's ``Function``; in exercise 8, ``Exception``);
- **builtins**: a short list (``BUILTINS``): no ``type``, ``vars``, ``open``, ``exec``, ...;
  ``getattr``/``hasattr`` go through the same guard, ``str.format`` through a formatter that does;
  a builtin left out is a NameError that says so (``_Builtins``).

A denied access is reported to the grader before anything else happens (``report``: its kind, the
construct, the cell, the line), so no ``except`` in learner code can hide it; the grader ends the
submission "not graded" and flags it (the learner's reason says the kind and the line, not the
construct: verdicts.DENIALS). Names the guards use are reserved: graded code cannot bind a name that
starts and ends with ``_``.
"""
import ast
import operator
import re
import string
import types

COMMON_TORCH = frozenset("""
    Tensor Size dtype device float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool long float double
    tensor as_tensor zeros ones full empty zeros_like ones_like full_like empty_like eye arange linspace
    rand randn randint rand_like randn_like manual_seed
    abs exp log log1p expm1 sqrt rsqrt sin cos tanh sigmoid relu neg reciprocal pow square sign clamp clip
    floor ceil round trunc maximum minimum max min sum mean prod cumsum argmax argmin amax amin logsumexp softmax
    log_softmax where masked_fill matmul mm bmm mv dot outer einsum t transpose permute reshape flatten squeeze
    unsqueeze cat stack split chunk broadcast_to broadcast_shapes is_tensor is_floating_point numel
    allclose isclose equal isfinite isnan isinf finfo iinfo promote_types result_type get_default_dtype cuda
""".split())
"""torch's members every exercise may use: its tensor functions, types and dtypes (no autograd, no
loading or compiling code, no private members)."""

POLICIES = {
    "ex3_freeing": {"writes": [("minigrad.function.BackwardFunction", "_saved")]},
    "ex4_versions": {"writes": [("minigrad.tensor._VersionCounter", "version")]},
    "ex5_grad_modes": {"writes": [("minigrad.grad_mode._State", "grad_enabled"), ("minigrad.grad_mode._State", "inference"),
                                  ("minigrad.grad_mode._Mode", "_was_grad_enabled"),
                                  ("minigrad.grad_mode._Mode", "_was_inference"),
                                  ("minigrad.tensor.Tensor", "_version_counter"),
                                  ("minigrad.tensor.Tensor", "_is_inference")],
                       "records": ["minigrad.grad_mode._Mode"]},
    "ex6_training": {"writes": [("minigrad.tensor.Tensor", "grad")]},
    "ex8_checkpoint": {"writes": [("minigrad.utils.checkpoint._Holder", "value")],
                       "records": ["minigrad.utils.checkpoint._Frame"],
                       "bases": ["builtins.Exception"],
                       "torch": ["random", "random.fork_rng"]},
    "ex9_gpu_kernel": {"modules": ["triton", "triton.language"]},
}
"""What each exercise's parts need beyond the common policy: attributes they must set (``writes``);
the classes whose objects a part keeps its own record on (``records``: an object of one may take
attributes of the learner's naming that its class does not define, so that what a part remembers,
and under which name, is the learner's design, while the class's own attributes and methods stay
minigrad's; a grad mode's ``_args``, a frame's ``pack``); bases a learner's class may derive from
besides ``BASES`` (``bases``: exercise 8's early stop may be an exception of the learner's own);
torch members."""

BASES = ("minigrad.function.Function",)
"""The classes graded code may derive from, besides ``object`` and its own."""

MODULES = {
    "math": None,  # all its public members: numbers and functions of numbers
    "heapq": None,
    "itertools": None,
    "functools": frozenset("reduce partial cmp_to_key lru_cache cache".split()),
    "collections": frozenset("defaultdict deque Counter OrderedDict".split()),
    "typing": frozenset("Any Optional Union List Tuple Dict Set Sequence Iterable Iterator Callable Mapping".split()),
    "torch": COMMON_TORCH,
    "torch.cuda": frozenset("is_available device_count current_device".split()),
    "triton": frozenset("jit cdiv next_power_of_2 language".split()),
    "triton.language": None,
}
"""The modules graded code may import, with the members it may read (None: any public member)."""

HIDDEN_MINIGRAD = ("minigrad.memory",)
"""minigrad's modules graded code reads nothing of: the ledger the checks measure saved bytes with.
(The course's tools, ``coursekit``, are no module of minigrad's: graded code may not import them.)"""

TENSOR_MEMBERS = frozenset("""
    shape dtype device ndim is_cuda is_leaf T mT data layout itemsize nbytes
    size dim numel stride storage_offset is_contiguous contiguous element_size tolist item is_floating_point
    is_complex
    to cpu cuda float double long int bool half type_as view view_as reshape reshape_as flatten squeeze unsqueeze
    expand expand_as permute transpose t unbind split chunk flip roll repeat narrow select index_select gather
    masked_select masked_fill masked_fill_ where clone copy_ fill_ zero_ new_zeros new_ones new_full new_empty
    new_tensor abs abs_ neg neg_ exp exp_ log log_ log1p expm1 sqrt sqrt_ rsqrt sin cos tanh tanh_ sigmoid
    sigmoid_ relu relu_ reciprocal pow pow_ square sign clamp clamp_ clip floor ceil round trunc frac
    add add_ sub sub_ mul mul_ div div_ true_divide floor_divide remainder fmod addcmul addcmul_ addcdiv addcdiv_
    lerp lerp_ maximum minimum max min amax amin argmax argmin sum mean prod std var norm cumsum cumprod
    logsumexp softmax log_softmax matmul mm bmm mv dot outer eq ne lt le gt ge equal allclose isclose isfinite
    isnan isinf all any nonzero count_nonzero sort argsort topk unique
""".split())
"""What graded code may use of a torch tensor (minigrad's storage): its values, shape and math; no
autograd (``backward``, ``grad``, hooks), no storage, files, numpy or sharing."""

MEMBERS = {
    str: frozenset(name for name in dir(str) if not name.startswith("_") and name not in ("format", "format_map")),
    int: frozenset(name for name in dir(int) if not name.startswith("_")),
    float: frozenset(name for name in dir(float) if not name.startswith("_")),
    bool: frozenset(name for name in dir(bool) if not name.startswith("_")),
    list: frozenset(name for name in dir(list) if not name.startswith("_")),
    tuple: frozenset(("count", "index")),
    dict: frozenset(name for name in dir(dict) if not name.startswith("_")),
    set: frozenset(name for name in dir(set) if not name.startswith("_")),
    frozenset: frozenset(name for name in dir(frozenset) if not name.startswith("_")),
    range: frozenset("start stop step count index".split()),
    slice: frozenset("start stop step indices".split()),
}
"""The members graded code may read of plain data's types (a string's ``format`` and ``format_map`` go
through ``_GuardedFormatter``; ``str.format`` itself is not there)."""

BUILTINS = """
    abs all any bool callable chr dict divmod enumerate filter float format frozenset hash int isinstance
    issubclass iter len list map max min next object ord pow range repr reversed round set slice sorted str sum
    tuple zip property staticmethod classmethod super
    ArithmeticError AssertionError AttributeError Exception IndexError KeyError LookupError NotImplementedError
    OverflowError RuntimeError StopIteration TypeError ValueError ZeroDivisionError NotImplemented Ellipsis
""".split()
"""The builtins graded code may use, besides ``getattr`` and ``hasattr`` (guarded) and ``print`` (``_Print``)."""

GUARD_NAME = re.compile(r"^_.*_$|^_print$|^_tmp")
"""Names the guards and RestrictedPython's rewriting use: graded code may not bind them."""

INPLACE = {"+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
           "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
           "<<=": operator.ilshift, ">>=": operator.irshift, "&=": operator.iand, "|=": operator.ior,
           "^=": operator.ixor}


# --- compiling (the grader's side) -------------------------------------------------------------

def _transformer():
    """RestrictedPython's transformer, loosened where minigrad code needs it: names and attributes
    with one leading underscore (``self._data``, ``def _unpack``) are checked at run time instead of
    refused, ``nonlocal`` is allowed (it rebinds a local of an enclosing function), and augmented
    assignment of attributes and items (``counter.version += 1``) runs through the guards."""
    from RestrictedPython.transformer import IOPERATOR_TO_STR, RestrictingNodeTransformer, copy_locations

    class Transformer(RestrictingNodeTransformer):
        def check_name(self, node, name, allow_magic_methods=False):
            if name is not None and name.startswith("_") and not _is_dunder(name) and name != "_":
                if GUARD_NAME.match(name):
                    self.error(node, f'"{name}" is a name the grader reserves')
                return
            super().check_name(node, name, allow_magic_methods)

        def visit_Attribute(self, node):
            if node.attr.startswith("_") and not _is_dunder(node.attr):
                hidden = ast.Attribute(node.value, "x" + node.attr, node.ctx)  # checked by the guards instead
                copy_locations(hidden, node)
                new = super().visit_Attribute(hidden)
                if isinstance(new, ast.Call):
                    new.args[1] = ast.Constant(node.attr)
                else:
                    new.attr = node.attr
                return new
            return super().visit_Attribute(node)

        def visit_Nonlocal(self, node):
            return node

        def visit_ClassDef(self, node):
            new = super().visit_ClassDef(node)  # rebuilt from a template, at line 1: put it at the learner's line
            for child in ast.walk(new):
                if getattr(child, "lineno", None) == 1 and child not in node.body:
                    ast.copy_location(child, node)
            return new

        def visit_Module(self, node):
            return ast.fix_missing_locations(super().visit_Module(node))

        def visit_AugAssign(self, node):
            if isinstance(node.target, (ast.Attribute, ast.Subscript)):
                node = self.node_contents_visit(node)
                target, op = node.target, ast.Constant(IOPERATOR_TO_STR[type(node.op)])
                obj = target.value.args[0]  # visited: _write_(obj).attr, _write_(obj)[key]
                if isinstance(target, ast.Attribute):
                    call = ast.Call(ast.Name("_augattr_", ast.Load()), [obj, ast.Constant(target.attr), op, node.value], [])
                else:
                    call = ast.Call(ast.Name("_augitem_", ast.Load()), [obj, target.slice, op, node.value], [])
                new = ast.Expr(call)
                copy_locations(new, node)
                return new
            return super().visit_AugAssign(node)

    return Transformer


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def compile_graded(tree, filename):
    """``tree`` (a learner cell's definitions, which passed the static check) compiled with the guards
    in place; raises SyntaxError whose ``lineno`` is the line of a construct RestrictedPython refuses."""
    from RestrictedPython import compile_restricted_exec

    result = compile_restricted_exec(tree, filename, policy=_transformer())
    if result.errors:
        match = re.match(r"Line (\d+): (.*)", result.errors[0])
        error = SyntaxError(match[2] if match else result.errors[0])
        error.lineno = int(match[1]) if match else 1
        raise error
    return result.code


# --- guarding (the grading process's side) -----------------------------------------------------

class Denied(BaseException):
    """Graded code tried what it may not (a BaseException: ``except Exception`` does not catch it)."""


class Guards:
    """The guard functions for one submission's graded code, from ``policy`` (plain data: the
    exercise's entry of POLICIES); ``report(construct, filename, line)`` is told of each denial
    before it is raised. ``learner_files`` tells graded code's frames (their file names) apart.
    ``aside``: in the learner's kernel only (Validate), whether the guards stand aside for now.
    ``jit``: what graded code gets for ``triton.jit`` (while grading, ``kernel_process.Kernels.jit``:
    no Triton compiles learner text in the grading process)."""

    def __init__(self, policy, report, learner_files, frame, jit=None, aside=None):
        import importlib

        import torch

        import minigrad

        self._report, self._files, self._frame, self._jit, self._aside = report, learner_files, frame, jit, aside
        self._torch, self._minigrad_tensor = torch, minigrad.Tensor
        self._modules = dict(MODULES)
        self._modules["torch"] = COMMON_TORCH | {name for name in policy.get("torch", []) if "." not in name}
        for dotted in policy.get("torch", []):
            if "." in dotted:
                module, name = dotted.rsplit(".", 1)
                self._modules.setdefault("torch." + module, set()).add(name)
        self._allowed_imports = {"minigrad", "torch", "math", "heapq", "itertools", "functools", "collections",
                                 "typing", *policy.get("modules", [])}

        def resolve(dotted):
            module, name = dotted.rsplit(".", 1)
            return getattr(importlib.import_module(module), name)

        self._writes = [(resolve(cls), name) for cls, name in policy.get("writes", [])]
        self._records = tuple(resolve(cls) for cls in policy.get("records", []))
        self._bases = tuple(resolve(name) for name in (*BASES, *policy.get("bases", [])))
        self._learner_classes = set()
        self._ctx_types = (resolve("minigrad.function.BackwardFunction"), resolve("minigrad.function._ForwardContext"))
        self._tensor_types = (torch.Tensor, torch.nn.Parameter)
        self._formatter = _GuardedFormatter(self)

    # what graded code sees as its globals' guards and builtins
    def namespace(self):
        import builtins

        from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

        safe = _Builtins({name: getattr(builtins, name) for name in BUILTINS})
        safe.update(getattr=self.getattr, hasattr=self.hasattr, __import__=self.import_,
                    __build_class__=builtins.__build_class__)
        return {"__builtins__": safe, "__name__": "graded", "__metaclass__": self.metaclass,
                "_getattr_": self.getattr, "_getitem_": self.getitem, "_getiter_": iter, "_write_": self.write,
                "_inplacevar_": self.inplace, "_augattr_": self.augattr, "_augitem_": self.augitem,
                "_apply_": lambda function, *args, **kwargs: function(*args, **kwargs),
                "_iter_unpack_sequence_": guarded_iter_unpack_sequence, "_unpack_sequence_": guarded_unpack_sequence,
                "_print_": _Print}

    def deny(self, kind, construct):
        """Report ``construct`` (of ``kind``: verdicts.DENIALS) with the innermost frame of graded code
        that tried it, then raise."""
        frame = self._frame(1)
        while frame is not None and frame.f_code.co_filename not in self._files:
            frame = frame.f_back
        filename, line = (frame.f_code.co_filename, frame.f_lineno) if frame else ("", 0)
        self._report(kind, construct, filename, line)
        raise Denied(construct)

    # reading
    def getattr(self, obj, name, *default):
        if type(name) is not str:
            self.deny("read", f"getattr({_describe(obj)}, {_describe(name)})")
        if name in ("format", "format_map") and type(obj) is str:
            return self._formatter.bound(obj, name)
        if name == "jit" and self._jit and type(obj).__name__ == "module" and obj.__name__ == "triton":
            return self._jit
        if not self._readable(obj, name):
            self._absent_or_denied(obj, name, default)
            return default[0]
        try:
            value = getattr(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise
        if type(obj).__name__ == "module" and not self._value_from_module(obj, value) and not self._standing_aside():
            self.deny("read", f"{_describe(obj)}.{name}")
        if isinstance(obj, BaseException) and name == "args":
            return tuple(v if type(v) in (str, int, float, bool, type(None)) else str(v) for v in value)
        return value

    def hasattr(self, obj, name):
        if type(name) is not str:
            self.deny("read", f"hasattr({_describe(obj)}, {_describe(name)})")
        if not self._readable(obj, name):
            self._absent_or_denied(obj, name, (False,))
            return False
        return hasattr(obj, name)

    def _absent_or_denied(self, obj, name, default):
        """An attribute graded code may not read: where it does not exist (an honest mistake, such as
        ``.unpack`` on a marker object), what Python does; where it does, a denial. Looked up
        without running any of the object's code (``inspect.getattr_static``)."""
        import inspect

        try:
            if type(obj) is not super:  # whose attributes getattr_static does not look up along the MRO
                inspect.getattr_static(obj, name)
        except AttributeError:
            if default:
                return
            raise AttributeError(f"'{_describe(obj)}' object has no attribute '{name}'") from None
        self.deny("read", f"{_describe(obj)}.{name}")

    def _standing_aside(self):
        return self._aside is not None and self._aside()

    def _readable(self, obj, name):
        if _is_dunder(name):
            return False
        if self._standing_aside():
            return True
        kind = type(obj)
        if kind.__name__ == "module":
            module = obj.__name__
            if module == "minigrad" or module.startswith("minigrad."):
                return module not in HIDDEN_MINIGRAD
            members = self._modules.get(module, ())
            return (not name.startswith("_")) if members is None else name in members
        if isinstance(obj, BaseException):
            return name == "args"
        if self._mine(obj) or kind in self._learner_classes:
            return True
        if isinstance(obj, type):
            return obj in self._learner_classes or obj in MEMBERS and name in MEMBERS[obj]
        if kind in self._tensor_types:
            return name in TENSOR_MEMBERS
        if kind is self._torch.Size:
            return name in MEMBERS[tuple] or name == "numel"
        if kind is self._torch.dtype:
            return name in ("is_floating_point", "is_complex", "is_signed", "itemsize")
        if kind is self._torch.device:
            return name in ("type", "index")
        if kind in (self._torch.finfo, self._torch.iinfo):
            return name in ("eps", "max", "min", "tiny", "bits", "resolution", "smallest_normal", "dtype")
        if kind.__module__ == "torch.return_types":
            return name in ("values", "indices")
        if kind is super:  # what a learner's or minigrad's class inherits; not super(torch.Tensor, t)
            return obj.__thisclass__ in self._learner_classes or self._mine(obj.__thisclass__)
        import collections

        if kind in (collections.defaultdict, collections.OrderedDict, collections.Counter):
            return name in MEMBERS[dict] or name in ("most_common", "default_factory")
        if kind is collections.deque:
            return not name.startswith("_")
        if kind.__module__.startswith("triton"):
            return name in ("dtype", "element_ty", "to", "shape")
        return name in MEMBERS.get(kind, ())

    def _mine(self, obj):
        """minigrad's own objects and classes (not the course's modules')."""
        module = getattr(obj if isinstance(obj, (type, types.FunctionType)) else type(obj), "__module__", "") or ""
        return (module == "minigrad" or module.startswith("minigrad.")) and module not in HIDDEN_MINIGRAD

    def _value_from_module(self, module, value):
        """What graded code may take from a module it may read: from minigrad's, minigrad's own
        objects, plain data, allowed modules and torch's types; from others what they list."""
        if not (module.__name__ == "minigrad" or module.__name__.startswith("minigrad.")):
            return True
        kind = type(value)
        if kind.__name__ == "module":
            name = value.__name__
            return (name == "minigrad" or name.startswith("minigrad.")) and name not in HIDDEN_MINIGRAD \
                or name in self._modules or name in self._allowed_imports
        if kind in (str, int, float, bool, type(None), tuple, frozenset) or self._mine(value):
            return True
        return value in (self._torch.Tensor, self._torch.Size) or kind is self._torch.dtype

    def getitem(self, obj, key):
        if type(obj).__name__ == "module" and not self._standing_aside():
            self.deny("read", f"{_describe(obj)}[...]")
        return obj[key]

    # writing
    def write(self, obj):
        return _Writer(self, obj)

    def writable(self, obj, name):
        if name is None:  # an item
            return self._standing_aside() or type(obj) in (list, dict) or isinstance(obj, (self._minigrad_tensor, *self._tensor_types)) \
                or type(obj).__name__ in ("defaultdict", "OrderedDict", "Counter", "deque")
        if _is_dunder(name) or type(obj).__name__ == "module":
            return False
        if type(obj) in self._learner_classes or self._standing_aside():
            return True
        if isinstance(obj, self._ctx_types) and not name.startswith("_"):
            return True
        if self._records and not isinstance(obj, type) and isinstance(obj, self._records) \
                and not _defined_by(type(obj), name):
            return True  # a record of the learner's own on an object its part keeps one on
        # a class only for an attribute the part sets (a mistake such as ``_Mode._was_grad_enabled = ...``)
        return any(name == attribute and (issubclass(obj, cls) if isinstance(obj, type) else isinstance(obj, cls))
                   for cls, attribute in self._writes)

    def inplace(self, op, x, y):
        return INPLACE[op](x, y)

    def augattr(self, obj, name, op, value):
        result = INPLACE[op](self.getattr(obj, name), value)
        setattr(self.write(obj), name, result)

    def augitem(self, obj, key, op, value):
        result = INPLACE[op](self.getitem(obj, key), value)
        self.write(obj)[key] = result

    # classes and imports
    def metaclass(self, name, bases, namespace):
        for base in bases:
            if not (base is object or base in self._bases or base in self._learner_classes):
                self.deny("base", f"class {name}({_describe(base)})")
        meta = type(bases[0]) if bases else type
        cls = meta(name, bases, namespace)
        self._learner_classes.add(cls)
        return cls

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        import importlib

        top = name.split(".")[0]
        allowed = name in self._allowed_imports or (top == "minigrad" and name not in HIDDEN_MINIGRAD) \
            or name in self._modules
        if level or not (allowed or self._standing_aside()):
            self.deny("import", f"import {name}")
        module = importlib.import_module(name)
        for member in fromlist or ():
            self.getattr(module, member)
        return module if fromlist else importlib.import_module(top)


class _Builtins(dict):
    """Graded code's builtins. A builtin Python has that graded code may not use (``id``, ``type``) is
    no typo: its NameError says so, as the grader words what graded code may not contain. Not a
    denial: the name reaches nothing, it is an honest mistake that costs the checks that meet it. A
    name graded code binds itself (``id = ...``, local or global) is found before the builtins."""

    def __missing__(self, name):
        import builtins

        if hasattr(builtins, name):
            raise NameError(f"the builtin `{name}` is not allowed in graded code", name=name)
        raise KeyError(name)  # Python's own NameError: "name '...' is not defined"


class _Print:
    """``print`` in graded code (RestrictedPython calls ``_print_()._call_print``): to standard output,
    which the learner's kernel shows and the grading process discards; ``file=`` is not followed."""

    def __init__(self, _getattr_=None):
        pass

    def _call_print(self, *objects, sep=" ", end="\n"):
        print(*objects, sep=str(sep), end=str(end))

    def __call__(self):  # ``printed``
        return ""


UNWRITABLE = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range)
"""Types whose instances take no attribute and no item: a write to one fails by itself, as in Python
(``holder.value = ...`` on a holder that is None), and costs only the checks that meet it."""


class _Writer:
    """What ``_write_(obj)`` gives graded code: each attribute or item it sets is checked first."""

    __slots__ = ("_guards", "_obj")

    def __init__(self, guards, obj):
        object.__setattr__(self, "_guards", guards)
        object.__setattr__(self, "_obj", obj)

    def __setattr__(self, name, value):
        self._check(name)
        setattr(self._obj, name, value)

    def __delattr__(self, name):
        self._check(name)
        delattr(self._obj, name)

    def __setitem__(self, key, value):
        self._check(None)
        self._obj[key] = value

    def __delitem__(self, key):
        self._check(None)
        del self._obj[key]

    def _check(self, name):
        guards, obj = object.__getattribute__(self, "_guards"), object.__getattribute__(self, "_obj")
        if type(obj) in UNWRITABLE:
            return  # Python refuses the write itself (AttributeError, TypeError): an honest bug, not an attack
        if not guards.writable(obj, name):
            guards.deny("write", f"{_describe(obj)}[...] = ..." if name is None else f"{_describe(obj)}.{name} = ...")


class _GuardedFormatter(string.Formatter):
    """``str.format`` whose fields' attributes and items (``{0.attr}``, ``{0[key]}``) go through the guards."""

    def __init__(self, guards):
        self._guards = guards

    def bound(self, template, name):
        if name == "format":
            return lambda *args, **kwargs: self.vformat(template, args, kwargs)
        return lambda mapping: self.vformat(template, (), mapping)

    def get_field(self, field_name, args, kwargs):
        import _string

        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._guards.getattr(obj, key) if is_attribute else self._guards.getitem(obj, key)
        return obj, first


def _defined_by(cls, name):
    """Whether ``cls`` (or a base, or its metaclass) defines ``name``: looked up without running any of
    its code (``inspect.getattr_static``)."""
    import inspect

    try:
        inspect.getattr_static(cls, name)
    except AttributeError:
        return False
    return True


def _describe(obj):
    """How a denied construct names what it was tried on: a module by name, a class by its name, else its type's."""
    if type(obj).__name__ == "module":
        return obj.__name__
    if isinstance(obj, type):
        return obj.__name__
    return type(obj).__name__

