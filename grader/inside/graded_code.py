"""What graded code may contain, checked on its text (Python's ``ast``) before any of it runs.

Grading runs only a learner's definitions (imports, functions, classes, constants). Their bodies run
when the checks call them, in the grading process; this check keeps those bodies to what minigrad
code needs, and keeps definitions from running code while they are made:

- imports only of the modules minigrad code uses (``policy.IMPORTS``);
- decorators only ``staticmethod``, ``classmethod``, ``property``; defaults and annotations only
  names, dotted names or constants; classes without keywords (metaclasses), their bodies only
  methods, docstrings and constant attributes;
- no dunder names or attributes (``__class__``, ``__init_subclass__``, ...; ``__init__`` and
  ``__repr__`` may be defined), no ``exec``, ``eval``, ``compile``, ``open``, ``globals``, ...,
  no modules that reach the interpreter or the machine (``sys``, ``os``, ``gc``, ``inspect``, ...),
  ``getattr`` only with a constant name, no ``setattr``, no ``global``;
- nothing of torch's own autograd (``torch.autograd``, ``torch.func``, grad-mode switches) nor of
  its doors to other code (``torch.load``, ``torch.utils``, ``torch.ops.load_library``, ...);
- no assigning to attributes of anything imported (``torch.equal = ...``, ``engine.backprop = ...``);
- Triton (exercise 9's kernels) only as ``import triton`` and ``import triton.language as tl``, and
  then only ``@triton.jit`` (a bare decorator), ``triton.cdiv``, ``triton.next_power_of_2`` and the
  language's functions and types (``tl.load``, ``tl.exp``, ``tl.constexpr``, ...: ``TRITON_LANGUAGE``).
  A kernel reads nothing else of any object but ``KERNEL_ATTRIBUTES`` (``x_ptr.dtype.element_ty``,
  ``pid.to(tl.int64)``), calls only Triton's members, ``.to`` and ``KERNEL_BUILTINS``, reads no name but
  its own, and stores only to its local names (``_check_kernel``): Triton recompiles its text, out of
  the run-time guards' reach (in the kernel process, ``kernel_process.py``).
  Those two names are Triton's alone: graded code binds them no other way (``import torch as tl``,
  a parameter ``tl``, ``tl = ...``) and uses them only before one of those attributes, so that
  ``tl.load`` is Triton's and not ``torch.load``, and ``tl.core...`` does not reach Triton's modules.

``definitions(source)`` is what grading runs of a learner's cell; ``violation(tree, where)`` gives its
first construct that breaks a rule, as the learner reads it: "`import os` at cell 5 line 2 is not
allowed in graded code", or None. The grader checks before grading; the exercises' ``graded`` calls
(coursekit.testing) check the same in the learner's kernel, so Validate says it first.
"""
import ast
import re

from .policy import IMPORTS

DECORATORS = {"staticmethod", "classmethod", "property"}
DUNDERS_DEFINED = {"__init__", "__repr__"}
MODULES_OUT_OF_REACH = {
    "sys", "os", "builtins", "importlib", "gc", "inspect", "ctypes", "atexit", "subprocess", "signal", "socket",
    "threading", "multiprocessing", "pickle", "marshal", "shutil", "pathlib", "io", "tempfile", "types", "runpy",
    "resource", "weakref", "traceback",
}
FORBIDDEN_NAMES = MODULES_OUT_OF_REACH | {
    "exec", "eval", "compile", "open", "input", "breakpoint", "globals", "locals", "vars", "setattr", "delattr",
    "help", "exit", "quit", "memoryview", "code",
}
FORBIDDEN_ATTRIBUTES = MODULES_OUT_OF_REACH | {
    # torch's autograd, and torch's ways to load or build code
    "autograd", "func", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "_set_grad_enabled",
    "load", "save", "load_library", "utils", "hub", "jit", "compile", "package", "library", "_C", "_dynamo",
    "classes", "from_file",
    # frames and code, which reach the grading code's own variables without a dunder
    "gi_frame", "gi_code", "cr_frame", "ag_frame", "f_back", "f_globals", "f_locals", "f_builtins", "f_code",
    "tb_frame", "tb_next", "co_code", "co_consts",
}
TRITON_IMPORTS = {("triton", None), ("triton.language", "tl")}
"""(module, alias) of the imports of Triton graded code may make; they bind the names ``triton`` and ``tl``."""
TRITON_NAMES = {"triton", "tl"}
TRITON_JIT = "triton.jit"
TRITON_LANGUAGE = frozenset("""
    program_id num_programs arange full zeros zeros_like cat load store atomic_add atomic_max atomic_min
    abs exp exp2 log log2 sqrt rsqrt sin cos erf sigmoid softmax floor ceil fma clamp maximum minimum where fdiv
    div_rn cdiv max min sum argmax argmin reduce cumsum cumprod dot rand randn randint
    broadcast broadcast_to reshape view expand_dims trans permute ravel join split flip squeeze unsqueeze
    constexpr dtype tensor pointer_type cast float16 bfloat16 float32 float64 int1 int8 int16 int32 int64
    uint8 uint16 uint32 uint64 static_range range static_assert static_print device_assert device_print
    multiple_of max_contiguous debug_barrier
""".split())
"""What graded code may take from ``triton.language``: its functions and types, none of its modules."""
TRITON_ATTRIBUTES = {"triton": {"cdiv", "next_power_of_2"}, "tl": TRITON_LANGUAGE}
KERNEL_ATTRIBUTES = {"to", "dtype", "element_ty", "shape", "T"}
"""What a ``@triton.jit`` kernel may read of anything but ``tl`` and ``triton``: Triton compiles the
kernel again from its text (and its interpreter runs that text), so no run-time guard sees it; this
static list, with ``KERNEL_BUILTINS`` and ``_check_kernel``, is all that holds there."""
KERNEL_BUILTINS = {"range", "float", "int", "bool", "min", "max", "abs", "len", "NotImplementedError"}
"""The builtins a kernel may name (and call), besides ``tl``'s and ``triton``'s members (the
release's stub kernels raise ``NotImplementedError()``)."""
KERNEL_STATEMENTS_OUT = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Import, ast.ImportFrom,
                         ast.Nonlocal, ast.Global)
"""What a kernel may not contain at all: it defines and imports nothing, and binds only local names."""
FORMAT_DUNDER = re.compile(r"\{[^}]*__")  # "{0.__class__}".format(x) reads a dunder attribute


class Rejected(Exception):
    def __init__(self, node, construct):
        super().__init__(construct)
        self.line, self.construct = getattr(node, "lineno", 1), construct


def violation(tree, where):
    """The first construct in ``tree`` (the definitions of a notebook cell, ``where``: "cell 5") that
    graded code may not contain, as a sentence for the learner; None when there is none."""
    try:
        _check_triton_names(tree)
        _Checker(_module_names(tree)).visit(tree)
    except Rejected as rejected:
        return f"`{rejected.construct}` at {where} line {rejected.line} is not allowed in graded code"
    return None


def _module_names(tree):
    """Names bound to what is imported (modules and what they hold), whose attributes graded code may
    not assign: the notebook's own (its setup cell imports these) and this code's imports."""
    names = set(IMPORTS)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _check_triton_names(tree):
    """Reject any binding of ``triton`` or ``tl`` but Triton's own imports (TRITON_IMPORTS), in any
    scope: an import, a parameter, an assignment, a def or class, an ``except ... as``, a match capture."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or (alias.name.split(".")[0] if isinstance(node, ast.Import) else alias.name)
                if bound in TRITON_NAMES and (isinstance(node, ast.ImportFrom) or
                                              (alias.name, alias.asname) not in TRITON_IMPORTS):
                    raise Rejected(node, _text(node))
            continue
        if isinstance(node, ast.Name):
            name = None if isinstance(node.ctx, ast.Load) else node.id
        elif isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.MatchMapping):
            name = node.rest
        elif isinstance(node, ast.alias):
            continue
        else:
            name = getattr(node, "name", None)  # def, class, except ... as, match captures, type parameters
        if name in TRITON_NAMES:
            raise Rejected(node, name)


def _text(node):
    return ast.unparse(node).splitlines()[0][:80]


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _plain(node):
    """A name, a dotted name or a constant: what decorators, defaults and annotations may be."""
    if isinstance(node, ast.Attribute):
        return _plain(node.value)
    return isinstance(node, (ast.Name, ast.Constant))


class _Checker(ast.NodeVisitor):
    def __init__(self, modules):
        self.modules = modules

    def visit_Import(self, node):
        for alias in node.names:
            if (alias.name, alias.asname) in TRITON_IMPORTS:
                continue
            self._module(node, alias.name)
            self._name(node, alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            raise Rejected(node, _text(node))
        self._module(node, node.module)
        for alias in node.names:
            if alias.name == "*" or alias.name in FORBIDDEN_ATTRIBUTES:
                raise Rejected(node, _text(node))
            self._name(node, alias.name)
            self._name(node, alias.asname or alias.name)

    def _module(self, node, module):
        parts = module.split(".")
        if parts[0] not in IMPORTS or any(part in FORBIDDEN_ATTRIBUTES or _is_dunder(part) for part in parts):
            raise Rejected(node, _text(node))

    def _name(self, node, name):
        if name in FORBIDDEN_NAMES or _is_dunder(name) or name in DECORATORS:
            raise Rejected(node, _text(node))

    def visit_Name(self, node):
        if node.id in TRITON_NAMES:  # only before one of its attributes (visit_Attribute), never on its own
            raise Rejected(node, node.id)
        if node.id == "getattr":  # called with a constant name is checked in visit_Call; passed around it is not
            raise Rejected(node, node.id)
        self._name(node, node.id)

    def visit_Global(self, node):  # rebinding the notebook's names (``check``) from inside a function
        raise Rejected(node, _text(node))

    def visit_Constant(self, node):
        if isinstance(node.value, str) and FORMAT_DUNDER.search(node.value):
            raise Rejected(node, _text(node))

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in TRITON_NAMES:
            if node.attr not in TRITON_ATTRIBUTES[node.value.id] or not isinstance(node.ctx, ast.Load):
                raise Rejected(node, _text(node))
            return
        if node.attr in FORBIDDEN_ATTRIBUTES or _is_dunder(node.attr):
            raise Rejected(node, _text(node))
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if not isinstance(root, ast.Name) or root.id in self.modules:
                raise Rejected(node, _text(node))
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or name.value in FORBIDDEN_ATTRIBUTES \
                    or _is_dunder(name.value):
                raise Rejected(node, _text(node))
            for child in [*node.args, *node.keywords]:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node):
        if any(ast.unparse(decorator) == TRITON_JIT for decorator in node.decorator_list):
            _check_kernel(node)
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Name) and decorator.id in DECORATORS or ast.unparse(decorator) == TRITON_JIT):
                raise Rejected(decorator, "@" + _text(decorator))
        arguments = node.args
        annotations = [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                              arguments.vararg, arguments.kwarg) if a is not None and a.annotation]
        for value in [*arguments.defaults, *filter(None, arguments.kw_defaults), *annotations,
                      *([node.returns] if node.returns else [])]:
            if not _plain(value):
                raise Rejected(value, _text(value))
        if _is_dunder(node.name):
            if node.name not in DUNDERS_DEFINED:
                raise Rejected(node, f"def {node.name}")
        else:
            self._name(node, node.name)
        for statement in node.body:
            self.visit(statement)
        for value in [*arguments.defaults, *filter(None, arguments.kw_defaults)]:
            self.visit(value)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node):
        for value in [*node.args.defaults, *filter(None, node.args.kw_defaults)]:
            if not _plain(value):
                raise Rejected(value, _text(value))
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        if node.decorator_list or node.keywords or not all(_plain(base) for base in node.bases):
            raise Rejected(node, _text(node).rstrip(":") + ":")
        self._name(node, node.name)
        for statement in node.body:
            constant_attribute = (isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None
                                  and _literal(statement.value))
            docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            if not (isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Pass)) or constant_attribute
                    or docstring):
                raise Rejected(statement, _text(statement))
            if isinstance(statement, ast.AnnAssign) and not _plain(statement.annotation):
                raise Rejected(statement.annotation, _text(statement.annotation))
        for base in node.bases:
            self.visit(base)
        for statement in node.body:
            self.visit(statement)

    def visit_AnnAssign(self, node):
        if not _plain(node.annotation):
            raise Rejected(node.annotation, _text(node.annotation))
        self.generic_visit(node)


def _check_kernel(node):
    """A ``@triton.jit`` kernel's text, which Triton compiles again (in the kernel process,
    ``kernel_process.py``) out of the run-time guards' reach: it reads of anything but ``tl`` and
    ``triton`` only ``KERNEL_ATTRIBUTES``, calls only their members, ``.to`` and ``KERNEL_BUILTINS``,
    reads no name but its parameters, its own local names, ``tl``, ``triton`` and those builtins (the
    kernel process has none of the notebook's), and stores only to its local names: no attribute, no
    item (what a kernel writes goes through ``tl.store``); it defines and imports nothing."""
    bound = {arg.arg for arg in ast.walk(node.args) if isinstance(arg, ast.arg)}
    bound |= {name.id for name in ast.walk(node) if isinstance(name, ast.Name) and not isinstance(name.ctx, ast.Load)}
    for inner in ast.walk(node):
        if inner is node:
            continue
        if isinstance(inner, KERNEL_STATEMENTS_OUT):
            raise Rejected(inner, _text(inner))
        if isinstance(inner, ast.Attribute) and not _triton_member(inner) and inner.attr not in KERNEL_ATTRIBUTES:
            raise Rejected(inner, _text(inner))
        if isinstance(inner, (ast.Attribute, ast.Subscript)) and not isinstance(inner.ctx, ast.Load):
            raise Rejected(inner, _text(inner))
        if isinstance(inner, ast.Call) and not (_triton_member(inner.func) or _named(inner.func, KERNEL_BUILTINS)
                                                or isinstance(inner.func, ast.Attribute) and inner.func.attr == "to"):
            raise Rejected(inner, _text(inner))
        if isinstance(inner, ast.Name) and not _named(inner, bound | TRITON_NAMES | KERNEL_BUILTINS):
            raise Rejected(inner, inner.id)


def _triton_member(node):
    return isinstance(node, ast.Attribute) and _named(node.value, TRITON_NAMES)


def _named(node, names):
    return isinstance(node, ast.Name) and node.id in names


def _literal(node):
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False


def definitions(source):
    """The definitions of a learner's cell (imports, functions, classes, constants): what grading runs
    of it, once ``violation`` found nothing wrong. Other statements at the top level (experiments,
    patches) are not graded."""
    tree = ast.parse(source)

    def keep(node):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(isinstance(t, ast.Name) for t in targets) and node.value is not None and _literal(node.value)
        return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)

    tree.body = [node for node in tree.body if keep(node)]
    return tree
