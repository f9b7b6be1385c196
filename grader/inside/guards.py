"""Graded code under run-time guards: what a learner's definitions may reach is decided while they run.

The static check (``graded_code.py``) reads the source and names a forbidden construct
precisely, but it cannot follow an open-ended graph of attributes (``collections._sys``) nor see which
strings a library will evaluate. So the grader also compiles a learner's definitions with
RestrictedPython (``compile_graded``): every attribute read and write, subscript, iteration,
unpacking, import, class statement, ``print`` and augmented assignment becomes a call of a guard,
and the guards (``Guards``, built in the grading process from the exercise's ``policy``) decide at
run time against the allowlists of ``policy.py``:

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
import collections
import operator
import re
import string
import types

from .policy import BASES, BUILTINS, CALLS, COMMON_TORCH, HIDDEN_MINIGRAD, IMPORTS, MEMBERS, MODULES, TENSOR_MEMBERS

GUARD_NAME = re.compile(r"^_.*_$|^_print$|^_tmp")
"""Names the guards and RestrictedPython's rewriting use: graded code may not bind them."""

FUNCTION_STATICS = ("forward", "backward", "setup_context")
"""A Function's static methods that take the ctx as an argument (``Guards._trusted_function``)."""

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
    ``aside``: in the learner's kernel only (Validate), whether the guards stand aside for now."""

    def __init__(self, policy, report, learner_files, frame, aside=None):
        from pkgutil import resolve_name as resolve  # a module's member, or a class's (``MeanDim._backward_cls``)

        import torch

        import minigrad

        self._report, self._files, self._frame, self._aside = report, learner_files, frame, aside
        self._torch, self._minigrad_tensor = torch, minigrad.Tensor
        self._modules = {name: members for name, members in MODULES.items()  # Triton only where named
                         if not name.startswith("triton") or name in policy.get("modules", ())}
        self._modules["torch"] = COMMON_TORCH | {name for name in policy.get("torch", []) if "." not in name}
        for dotted in policy.get("torch", []):
            if "." in dotted:
                module, name = dotted.rsplit(".", 1)
                self._modules.setdefault("torch." + module, set()).add(name)
        self._allowed_imports = {*IMPORTS, *policy.get("modules", [])}

        self._writes = [(resolve(cls), name) for cls, name in policy.get("writes", [])]
        self._calls = [(resolve(cls), name) for cls, name in (*CALLS, *policy.get("calls", []))]
        self._records = tuple(resolve(cls) for cls in policy.get("records", []))
        self._bases = tuple(resolve(name) for name in (*BASES, *policy.get("bases", [])))
        self._minigrad = frozenset(policy.get("minigrad", ()))
        self._learner_classes = set()
        self._node_type, self._forward_context = resolve("minigrad.function.BackwardFunction"), \
            resolve("minigrad.function._ForwardContext")
        self._function = resolve("minigrad.function.Function")
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
        if (self._unbound(obj, name, value) or self._private_method(name, value)) and not self._standing_aside():
            self.deny("read", f"{_describe(obj)}.{name}")
        if isinstance(obj, BaseException) and name == "args":
            return tuple(v if type(v) in (str, int, float, bool, type(None)) else str(v) for v in value)
        if isinstance(value, (list, dict, set, collections.deque)) and self._mine(obj) and not self.writable(obj, name):
            return _frozen(value)  # a container minigrad keeps (a tensor's hooks): graded code may look, not change
        return value

    def _unbound(self, obj, name, value):
        """Whether ``value``, read as ``obj.name``, is a method of minigrad's that is not bound to an
        object: called so, it takes any object as ``self`` and does to it what its class's code does
        (``Module.register_parameter`` writes the name it is given), which no guard sees. Graded code
        uses minigrad's methods bound (``tensor.add(...)``, ``super().f(...)`` in its own class),
        and static and class methods, which take no ``self``."""
        if not isinstance(value, types.FunctionType) or not self._mine(value):
            return False
        if type(obj).__name__ == "module":  # a method kept under a module's name (``detach = Tensor.detach``)
            return value.__qualname__.split(".")[-2:-1] not in ([], ["<locals>"])
        owner = obj.__self_class__ if type(obj) is super else obj
        if type(obj) is super and not isinstance(obj.__self__, type):
            return False  # bound to the object super was given, which Python checked is an instance
        return isinstance(owner, type) and not isinstance(_static(owner, name), staticmethod)

    def _private_method(self, name, value):
        """Whether ``value``, read as ``obj.name``, is a private method of minigrad's bound to an object
        that its exercise's part does not call (``CALLS``, the policy's ``calls``). Those write the
        state of the object they are bound to, which graded code may not write itself, and some take
        a foreign object to write on (``tensor._take_history(node, 0)``, ``node._save(...)``). The
        learner's own definitions installed on minigrad's classes (``Tensor._mutate``) are not minigrad's."""
        if not name.startswith("_") or not isinstance(value, types.MethodType) or not self._mine(value.__func__):
            return False
        return not any(name == attribute and isinstance(value.__self__, cls) for cls, attribute in self._calls)

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
                return module not in HIDDEN_MINIGRAD and self._exposed(obj, name)
            members = self._modules.get(module, ())
            return (not name.startswith("_")) if members is None else name in members
        if isinstance(obj, BaseException):
            return name == "args"
        if name in FUNCTION_STATICS and self._trusted_function(obj):
            return False
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
        if kind in (collections.defaultdict, collections.OrderedDict, collections.Counter):
            return name in MEMBERS[dict] or name in ("most_common", "default_factory")
        if kind is collections.deque:
            return not name.startswith("_")
        if kind.__module__.startswith("triton"):
            return name in ("dtype", "element_ty", "to", "shape")
        return name in MEMBERS.get(kind, ())

    def _trusted_function(self, obj):
        """Whether ``obj`` is a Function minigrad defines (an op's, as a node's ``_forward_cls``), an
        object of one, or ``super()`` from one. Its static ``forward``, ``backward`` and
        ``setup_context`` take any ``ctx``: ``Mul.forward(node, x)`` would write on a node minigrad
        built for trusted code. Graded code runs its own Functions' (``apply`` runs minigrad's, on a
        ctx it makes)."""
        owner = obj.__thisclass__ if type(obj) is super else obj if isinstance(obj, type) else type(obj)
        return issubclass(owner, self._function) and owner not in self._learner_classes

    def _exposed(self, module, name):
        """Whether the exercise's policy lists ``module.name`` (``minigrad``): the member itself, a
        module on the way to one, or a public member (not a submodule) of a module listed as ``M.*``."""
        path = f"{module.__name__}.{name}"
        if path in self._minigrad or any(entry.startswith(path + ".") for entry in self._minigrad):
            return True
        return f"{module.__name__}.*" in self._minigrad and not name.startswith("_") \
            and type(getattr(module, name, None)).__name__ != "module"

    def _mine(self, obj):
        """minigrad's own objects and classes (not the course's modules'), by the module their class
        was defined in: set when the class was made, which graded code cannot set (no dunder name,
        no ``type``) nor change (no dunder write, and no trusted function that writes a name it is given
        on an object it is given: ``tests/grading/test_reachable.py``), so an object cannot pass for one."""
        kind = obj if isinstance(obj, (type, types.FunctionType)) else type(obj)
        if kind in self._learner_classes:
            return False
        module = getattr(kind, "__module__", "") or ""
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
        if self._learners_ctx(obj) and not name.startswith("_") and not _defined_by(type(obj), name):
            return True  # a value the learner's forward keeps for its backward (``ctx.dim = dim``)
        if self._records and not isinstance(obj, type) and isinstance(obj, self._records) \
                and not _defined_by(type(obj), name):
            return True  # a record of the learner's own on an object its part keeps one on
        # a class only for an attribute the part sets (a mistake such as ``_Mode._was_grad_enabled = ...``)
        return any(name == attribute and (issubclass(obj, cls) if isinstance(obj, type) else isinstance(obj, cls))
                   for cls, attribute in self._writes)

    def _learners_ctx(self, obj):
        """Whether ``obj`` is a ``ctx`` minigrad made for a call of a Function the learner defined: a
        node whose class minigrad made for that Function (``_forward_cls``, set when the class was
        made), or the context of a forward that records nothing, which records its Function when made."""
        kind = type(obj)
        if kind is self._forward_context:
            return vars(obj).get("_forward_cls") in self._learner_classes
        return issubclass(kind, self._node_type) and kind.__dict__.get("_forward_cls") in self._learner_classes

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
        allowed = name in self._allowed_imports and top != "minigrad" or name in self._modules \
            or top == "minigrad" and name not in HIDDEN_MINIGRAD \
            and (name == "minigrad" or any(entry.startswith(name + ".") for entry in self._minigrad))
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


UNWRITABLE = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset, range, types.MappingProxyType)
"""Types whose instances take no attribute and no item: a write to one fails by itself, as in Python
(``holder.value = ...`` on a holder that is None), and costs only the checks that meet it."""


def _frozen(value):
    """A container minigrad keeps, as graded code reads it: a read-only copy, the containers in it
    frozen too (lists and deques as tuples, dicts of any kind as mapping proxies, sets as frozensets;
    a tuple of another type, such as torch.Size, as it is), so that nothing graded
    code does with it (an item written, ``append``, ``heapq.heappush``, ``list.append(kept, x)``)
    changes minigrad's; anything else in it as it is."""
    if type(value) is tuple or isinstance(value, (list, collections.deque)):
        items = tuple(_frozen(item) for item in value)
        return value if type(value) is tuple and all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        return types.MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, set):
        return frozenset(value)
    return value


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
    return _static(cls, name) is not _static


def _static(cls, name):
    """``cls.name`` as its class body (or a base's) binds it, without running any code; ``_static`` if none."""
    import inspect

    return inspect.getattr_static(cls, name, _static)


def _describe(obj):
    """How a denied construct names what it was tried on: a module by name, a class by its name, else its type's."""
    if type(obj).__name__ == "module":
        return obj.__name__
    if isinstance(obj, type):
        return obj.__name__
    return type(obj).__name__

