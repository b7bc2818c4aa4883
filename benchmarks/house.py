"""The house a spec run walks through, measured two ways: a traced replay, and a static walk
of the calls that carry a spec.

**The traced replay.** A shipped spec (``fixtures/specs/create_file.atom.yaml``) replays in
this process (`pytest_atom.run_spec`, the path every front end takes) under `sys.setprofile`
and `threading.setprofile`, so the gateway's thread counts too. Every ``call`` event of a
pytest-atom frame is kept, per thread, in order. A module's *package* is
``pytest_atom.<first part>`` (``pytest_atom.replay``); a ground-floor module
(``pytest_atom.paths``) is a package of its own. `pytest_atom.run_spec` is looked up before
the trace starts, so the modules it imports are loaded (as in a pytest session, whose
plugin loads them at start-up); what the run imports lazily still counts. It prints:

- *crossings*: the calls whose caller, the nearest pytest-atom frame below them on the
  same thread's stack, is in another package (target: at most 150);
- *moves*: per thread, how often the module (the package) of a call differs from the
  previous call's: the "moves between files";
- the modules entered, the climbs back into a module left earlier, the deepest chain.

The numbers are counts: they do not depend on the machine's load, and two runs of one
tree print the same.

**The static walk.** From `pytest_atom.run.spec_run.run_spec`, read from the source (`ast`),
never imported: in a function's body (nested functions included), in source order, each
call that passes the spec is followed. An argument passes the spec when it is a name bound
to it (the parameter it arrived in, ``spec`` at the start) or an attribute named ``spec``
(``self.spec``, ``run.spec``). A call is resolved through the module's names: a function
or class of the module, a name imported from another module (re-exports followed), a
function of an imported module (``module.f``), or a method of an object that holds the spec
(``self.method``, ``run.attempt_all``: a name bound to the object a spec-carrying call
made or returned, when its class, or a base, has an attribute ``spec``), within its
class and its bases. A class called with the spec enters its ``__init__`` and ``__post_init__`` (a class
without either is entered in its module and ends there). The callee's parameter that
receives the spec (by position, ``self`` skipped, or by keyword) carries it on. The walk
is depth-first and enters each function once. Each entry into a function of another
module, and each return to the caller's module, is a *module visit*; it prints the
visits, the distinct modules, the *climbs* (a move to a module of a higher layer than the
one it came from; layers as pyproject.toml's ``[tool.importlinter]`` declares them; a
return up the layers is a climb), and the returns to a module already left (target: at
most 45 visits and 8 climbs). With
``--broad`` every object of the package's classes such a call returns counts as holding the
spec (an upper bound: a `SessionInput` built from the spec does not hold it).

Run by hand (no test times it). Compare two trees by putting one first on the path::

    python benchmarks/house.py                                  # this checkout
    PYTHONPATH=/path/to/old/checkout python benchmarks/house.py --root /path/to/old/checkout
    python benchmarks/house.py --static-only                    # the walk alone, no replay
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import tomlkit

# --- the traced replay -------------------------------------------------------------------


def module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if isinstance(name, str) and name.startswith("pytest_atom") else None


def package_of(module: str) -> str:
    """``pytest_atom.<first part>``: a subpackage, or a ground-floor module of its own."""
    return ".".join(module.split(".")[:2])


def moves(modules: list[str]) -> int:
    return sum(1 for n in range(1, len(modules)) if modules[n] != modules[n - 1])


@dataclass
class Trace:
    """What the profiler saw: every call of a pytest-atom frame, per thread."""

    calls: dict[int, list[str]] = field(default_factory=dict)
    crossings: int = 0
    crossed: dict[tuple[str, str], int] = field(default_factory=dict)
    deepest: list[str] = field(default_factory=list)

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        module = module_of(frame)
        if module is None:
            return
        self.calls.setdefault(threading.get_ident(), []).append(module)
        chain: list[str] = []  # the modules on the stack, nearest first
        caller: str | None = None  # the nearest pytest-atom frame below this one
        walk: FrameType | None = frame
        while walk is not None:
            owner = module_of(walk)
            if owner is not None and (not chain or chain[-1] != owner):
                chain.append(owner)
            if owner is not None and walk is not frame and caller is None:
                caller = owner
            walk = walk.f_back
        if caller is not None and package_of(caller) != package_of(module):
            self.crossings += 1
            pair = (package_of(caller), package_of(module))
            self.crossed[pair] = self.crossed.get(pair, 0) + 1
        if len(chain) > len(self.deepest):
            self.deepest = chain


def traced(root: Path, spec_path: str, top: int) -> None:
    import pytest_atom

    spec = pytest_atom.load_spec(root / spec_path)
    run_spec = pytest_atom.run_spec  # loads the run's modules: loading is not the run
    trace = Trace()
    with tempfile.TemporaryDirectory() as runs:
        threading.setprofile(trace.profile)
        sys.setprofile(trace.profile)
        try:
            result = run_spec(spec, runs_dir=Path(runs))
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    every = [m for calls in trace.calls.values() for m in calls]
    stays = [
        m
        for calls in trace.calls.values()
        for n, m in enumerate(calls)
        if n == 0 or calls[n - 1] != m
    ]
    seen: set[str] = set()
    climbs = 0
    for module in stays:
        climbs += module in seen
        seen.add(module)
    print(f"pytest_atom from {Path(pytest_atom.__file__).parent}")
    print(f"traced replay of {spec_path}: passed={result.passed}")
    print(f"  calls between packages (crossings): {trace.crossings}")
    file_moves = sum(moves(calls) for calls in trace.calls.values())
    package_moves = sum(moves([package_of(m) for m in calls]) for calls in trace.calls.values())
    print(f"  moves between modules: {file_moves}, between packages: {package_moves}")
    print(f"  modules entered: {len(set(every))}; climbs back into a module left: {climbs}")
    print(f"  deepest chain of modules on the stack ({len(trace.deepest)}):")
    print("    " + " > ".join(m.removeprefix("pytest_atom.") for m in reversed(trace.deepest)))
    if top:
        print(f"  the {top} busiest crossings (caller > callee: calls):")
        busiest = sorted(trace.crossed.items(), key=lambda item: -item[1])[:top]
        for (caller, callee), count in busiest:
            short = (caller.removeprefix("pytest_atom."), callee.removeprefix("pytest_atom."))
            print(f"    {short[0]} > {short[1]}: {count}")


# --- the static walk ---------------------------------------------------------------------

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Module:
    """One module's source: its functions, its classes' methods and the names it imports."""

    name: str
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)  # local name: dotted target


def read_modules(package: Path) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = modules[name] = Module(name)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
        for inner in ast.walk(tree):  # lazy imports in functions bind names too
            if isinstance(inner, ast.Import):
                for alias in inner.names:
                    if alias.asname:
                        module.imported[alias.asname] = alias.name
            elif isinstance(inner, ast.ImportFrom):
                base = name.split(".")[: None if is_package else -1]
                if inner.level:
                    base = base[: len(base) - inner.level + 1]
                target = ".".join([*base, *([inner.module] if inner.module else [])])
                if not inner.level:
                    target = inner.module or ""
                for alias in inner.names:
                    module.imported[alias.asname or alias.name] = f"{target}.{alias.name}"
    return modules


@dataclass(frozen=True)
class Target:
    """What a call enters: a function (``Class.method`` for a method) of a module."""

    module: str
    qualname: str


def parameters(node: Function) -> list[str]:
    args = node.args
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


#: What carries the spec in a function: a name bound to the spec itself (None), or to an
#: object that holds it (the object's class).
Carriers = dict[str, "Target | None"]


@dataclass
class Walk:
    modules: dict[str, Module]
    entered: set[Target] = field(default_factory=set)
    tour: list[str] = field(default_factory=list)
    #: Count every object of the package's classes a spec-carrying call returns as holding
    #: the spec, whether or not its class has a `spec` (`--broad`: an upper bound).
    broad: bool = False

    def resolve_name(self, module: str, name: str, depth: int = 0) -> Target | None:
        """`name` as `module` sees it: defined there, or imported (re-exports followed)."""
        found = self.modules.get(module)
        if found is None or depth > 10:
            return None
        if name in found.functions or name in found.classes:
            return Target(module, name)
        target = found.imported.get(name)
        if target is None:
            return None
        if target in self.modules:
            return Target(target, "")  # a module: no call enters it by itself
        owner, _, attr = target.rpartition(".")
        return self.resolve_name(owner, attr, depth + 1)

    def is_class(self, target: Target | None) -> bool:
        return (
            target is not None
            and "." not in target.qualname
            and target.qualname in self.modules[target.module].classes
        )

    def holds_spec(self, target: Target, depth: int = 0) -> bool:
        """Whether objects of a class hold the spec: it (or a base) has an attribute
        ``spec``, a field or one its methods set."""
        node = self.modules[target.module].classes.get(target.qualname)
        if node is None or depth > 10:
            return False
        if self.broad:
            return True
        for inner in ast.walk(node):
            if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                if inner.target.id == "spec":
                    return True
            if isinstance(inner, ast.Attribute) and inner.attr == "spec":
                if isinstance(inner.ctx, ast.Store):
                    return True
        return any(
            self.holds_spec(base, depth + 1)
            for b in node.bases
            for base in self.classes_in(target.module, b)
        )

    def classes_in(self, module: str, node: ast.expr | None) -> list[Target]:
        """The package's classes an expression or annotation names (``A if x else B``)."""
        if isinstance(node, ast.IfExp):
            return [*self.classes_in(module, node.body), *self.classes_in(module, node.orelse)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return []
        if isinstance(node, ast.BinOp):  # `X | None`
            return [*self.classes_in(module, node.left), *self.classes_in(module, node.right)]
        if isinstance(node, ast.Name):
            found = self.resolve_name(module, node.id)
            return [found] if found is not None and self.is_class(found) else []
        return []

    def resolve(
        self, module: str, call: ast.Call, carriers: Carriers, aliases: dict[str, list[Target]]
    ) -> list[Target]:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in aliases:
                return aliases[func.id]
            found = self.resolve_name(module, func.id)
            return [found] if found is not None else []
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return []
        holder = carriers.get(func.value.id)
        if holder is not None:  # a method of an object that holds the spec
            found = self.method(holder.module, holder.qualname, func.attr)
            return [found] if found is not None else []
        owner = self.resolve_name(module, func.value.id)
        if owner is not None and not owner.qualname:
            found = self.resolve_name(owner.module, func.attr)
            return [found] if found is not None else []
        return []

    def method(self, module: str, cls: str, name: str, depth: int = 0) -> Target | None:
        """`cls.name`, in the class or (depth first) its bases the walk can read."""
        node = self.modules[module].classes.get(cls)
        if node is None or depth > 10:
            return None
        for f in node.body:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == name:
                return Target(module, f"{cls}.{name}")
        for base in node.bases:
            for found in self.classes_in(module, base):
                hit = self.method(found.module, found.qualname, name, depth + 1)
                if hit is not None:
                    return hit
        return None

    def bodies(self, target: Target) -> Iterator[tuple[Function, Target | None]]:
        """The function(s) a target enters, each with the class whose method it is: a
        function, a method, a class's constructors."""
        module = self.modules[target.module]
        cls, _, name = target.qualname.rpartition(".")
        if not cls and name in module.functions:
            yield module.functions[name], None
        elif not cls and name in module.classes:
            for init in ("__init__", "__post_init__"):
                found = self.method(target.module, name, init)
                if found is not None:
                    yield from self.bodies(found)
        elif cls in module.classes:
            for node in module.classes[cls].body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    yield node, Target(target.module, cls)

    def received(
        self, call: ast.Call, carriers: Carriers, callee: Function, owner: Target | None
    ) -> Carriers:
        """The callee's parameters that receive the spec (or an object holding it)."""
        names = parameters(callee)
        into: Carriers = {names[0]: owner} if owner is not None and names else {}
        positional = names[1 if owner is not None else 0 :]
        pairs = [(positional[n], a) for n, a in enumerate(call.args) if n < len(positional)]
        pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
        for name, arg in pairs:
            if isinstance(arg, ast.Name) and arg.id in carriers:
                into[name] = carriers[arg.id]
            elif isinstance(arg, ast.Attribute) and arg.attr == "spec":
                into[name] = None
        return into

    def enter(self, target: Target, carriers: Carriers) -> None:
        if target in self.entered:
            return
        self.entered.add(target)
        for function, _owner in self.bodies(target):
            self.walk(target.module, function, carriers)

    def carries(self, call: ast.Call, carriers: Carriers) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if carriers.get(func.value.id) is not None:
                return True
        return any(
            (isinstance(a, ast.Name) and a.id in carriers)
            or (isinstance(a, ast.Attribute) and a.attr == "spec")
            for a in (*call.args, *(kw.value for kw in call.keywords))
        )

    def walk(self, module: str, function: Function, carriers: Carriers) -> None:
        carriers = dict(carriers)
        aliases: dict[str, list[Target]] = {}
        nodes = [n for n in ast.walk(function) if isinstance(n, (ast.Call, ast.Assign))]
        for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Assign):
                self.bind(module, node, carriers, aliases)
                continue
            if not self.carries(node, carriers):
                continue
            for target in self.resolve(module, node, carriers, aliases):
                self.follow(module, node, target, carriers)

    def bind(
        self,
        module: str,
        node: ast.Assign,
        carriers: Carriers,
        aliases: dict[str, list[Target]],
    ) -> None:
        """A name bound to a class (``run_type = A if x else B``), or to what a call that
        carries the spec returns, when that is an object of a class that holds the spec
        (`holds_spec`): its methods' calls carry the spec too."""
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return
        name, value = node.targets[0].id, node.value
        classes = self.classes_in(module, value)
        if classes:
            aliases[name] = classes
            return
        if not isinstance(value, ast.Call) or not self.carries(value, carriers):
            return
        for target in self.resolve(module, value, carriers, aliases):
            if self.is_class(target) and self.holds_spec(target):
                carriers[name] = target
            elif target.qualname:
                for callee, _ in self.bodies(target):
                    for cls in self.classes_in(target.module, callee.returns):
                        if self.holds_spec(cls):
                            carriers[name] = cls

    def follow(self, module: str, call: ast.Call, target: Target, carriers: Carriers) -> None:
        if not target.qualname or target in self.entered or target.module not in self.modules:
            return
        self.tour.append(target.module)
        into: Carriers = {}
        owner = target if self.is_class(target) else None
        for callee, cls in self.bodies(target):
            into |= self.received(call, carriers, callee, cls if owner is None else owner)
            if cls is not None and owner is None and isinstance(call.func, ast.Attribute):
                into.setdefault(parameters(callee)[0], cls)
        self.enter(target, into)
        self.tour.append(module)


def layer_ranks(root: Path) -> dict[str, int]:
    """Each layer node's rank, top (0) to bottom, as pyproject.toml declares them."""
    config = tomlkit.parse((root / "pyproject.toml").read_text(encoding="utf-8")).unwrap()
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["type"] == "layers")
    return {name.strip(): n for n, layer in enumerate(layers) for name in layer.split("|")}


def static_walk(
    root: Path, start: str = "pytest_atom.run.spec_run.run_spec", *, broad: bool = False
) -> dict[str, int]:
    """The walk's figures: visits, modules, climbs and returns to a module already left."""
    walk = Walk(read_modules(root / "pytest_atom"), broad=broad)
    module, _, name = start.rpartition(".")
    walk.tour.append(module)
    walk.enter(Target(module, name), {"spec": None})
    tour = [m for n, m in enumerate(walk.tour) if n == 0 or walk.tour[n - 1] != m]
    ranks = layer_ranks(root)

    def rank(module: str) -> int:
        return ranks.get(package_of(module), ranks.get(module, len(ranks)))

    seen: set[str] = set()
    returns = 0
    for visited in tour:
        returns += visited in seen
        seen.add(visited)
    climbs = sum(1 for n in range(1, len(tour)) if rank(tour[n]) < rank(tour[n - 1]))
    return {"visits": len(tour), "modules": len(seen), "climbs": climbs, "returns": returns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--spec", default="fixtures/specs/create_file.atom.yaml")
    parser.add_argument("--static-only", action="store_true", help="the static walk alone")
    parser.add_argument("--top", type=int, default=0, help="list the N busiest crossings")
    parser.add_argument(
        "--broad", action="store_true", help="the walk's upper bound (see Walk.broad)"
    )
    args = parser.parse_args()
    figures = static_walk(args.root, broad=args.broad)
    print(
        "static walk from run_spec: {visits} module visits to {modules} modules, "
        "{climbs} climbs back up the layers, {returns} returns to a module already left".format(
            **figures
        )
    )
    if not args.static_only:
        traced(args.root, args.spec, args.top)


if __name__ == "__main__":
    main()
