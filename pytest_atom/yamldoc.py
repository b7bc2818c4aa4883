"""The one YAML loader for hand-written files, with errors that point at the real cause,
and the one dumper for the YAML files the project writes (`dump`).

Specs, the project config, scripts and eval cases are read by the same three steps, in one
``try`` (`load`): compose nodes (which know their line and column), refuse what would blow
up, then build data; every PyYAML failure becomes a `YamlDocError` with its line and
column, which each file kind wraps in its own error type. Cassettes keep their own fast
reader (`pytest_atom.replay.fastyaml`).

* **Alias bombs.** Ten nested anchors of ten aliases each (the "billion laughs") stand for
  10**10 nodes in a dozen lines, and every walk over the data would take forever. The
  node graph is measured first, in time linear in the file, and a document whose aliases
  expand it by more than `ALIAS_EXPANSION_LIMIT` nodes is refused.
* **Error marks.** For an unclosed quote or bracket PyYAML gives up at the end of the file
  (the problem mark), so the location given is where the construct began (the context
  mark); the message names both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import yaml

from pytest_atom.errors import YamlDocError

#: Nodes that aliases may add to a document, counted as if every alias were written out.
ALIAS_EXPANSION_LIMIT = 10_000


def compose(loader: yaml.SafeLoader) -> yaml.Node | None:
    """The single document of `loader`'s stream as a node graph (None when it is empty);
    YamlDocError for invalid YAML, more than one document, or aliases that blow up."""
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    if node is not None:
        check_aliases(node)
    return node


def from_yaml_error(exc: yaml.YAMLError) -> YamlDocError:
    """PyYAML's error as one line naming both of its marks, located at the real cause."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return YamlDocError(f"invalid YAML: {exc}")
    problem, context = exc.problem, exc.context
    problem_mark, context_mark = exc.problem_mark, exc.context_mark
    tag = re.match(r"could not determine a constructor for the tag '([^']*)'", problem or "")
    if tag and problem_mark is not None:
        return YamlDocError(
            f"unknown YAML tag {tag.group(1)!r}: this file is plain YAML; remove the tag, or "
            "quote the value if the text starts with '!'",
            problem_mark.line + 1,
            problem_mark.column + 1,
        )
    if context:  # two places: say which is which
        parts = [problem and problem + _at(problem_mark), context + _at(context_mark)]
        message = "invalid YAML: " + " ".join(p for p in parts if p)
    else:
        message = f"invalid YAML: {problem or 'unreadable YAML'}"
    # At the end of the file: the construct the parser was reading is what needs fixing.
    at_end = problem is not None and ("end of stream" in problem or "<stream end>" in problem)
    cause = context_mark if (at_end or problem_mark is None) and context_mark else problem_mark
    if cause is None:
        return YamlDocError(message)
    return YamlDocError(message, cause.line + 1, cause.column + 1)


def _at(mark: yaml.Mark | None) -> str:
    return "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"


def check_aliases(root: yaml.Node, limit: int = ALIAS_EXPANSION_LIMIT) -> None:
    """Refuse a node graph whose aliases expand it by more than `limit` nodes, or loop;
    each node's size is computed once, so this is linear however large the expansion."""
    sizes: dict[int, int] = {}
    nodes: dict[int, yaml.Node] = {}
    references: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise YamlDocError("recursive YAML alias", *_position(node))
        active.add(key)
        total = 1
        for child in _children(node):
            references[id(child)] = references.get(id(child), 0) + 1
            total += size(child)
        active.discard(key)
        sizes[key], nodes[key] = total, node
        return total

    expanded = size(root)
    if expanded - len(sizes) <= limit:
        return
    shared = [k for k, n in references.items() if n > 1]
    culprit = max(shared, key=lambda k: (sizes[k], -nodes[k].start_mark.index))
    node = nodes[culprit]
    raise YamlDocError(
        f"YAML aliases would expand this document to {expanded} nodes, more than {limit} "
        f"beyond what is written (the anchor here stands for {sizes[culprit]} nodes and "
        f"{references[culprit] - 1} aliases repeat it); write the values out or use fewer "
        "aliases",
        *_position(node),
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _position(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def load(
    text: str,
    loader_class: type[yaml.SafeLoader] = yaml.SafeLoader,
    build: Callable[[yaml.SafeLoader, yaml.Node], Any] | None = None,
) -> tuple[yaml.Node | None, Any]:
    """The node graph of `text`'s single document and its data (None, None when empty);
    `build` turns the node into data (default: the loader constructs the document)."""
    try:  # the reader refuses control characters (an ESC, say) as it is made
        loader = loader_class(text)
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    try:
        node = compose(loader)
        if node is None:
            return None, None
        if build is None:
            return node, loader.construct_document(node)
        return node, build(loader, node)
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    finally:
        loader.dispose()


def construct(node: yaml.Node) -> Any:
    """Plain data of one node of a document `load` has composed (a part of a script)."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    finally:
        loader.dispose()


def safe_load(text: str) -> object:
    """`yaml.safe_load`, with the same refusals and error marks as `compose`."""
    return load(text)[1]


def _multiline(value: str) -> bool:
    return "\n" in value


def dump(data: Any, *, fast: bool = False, block: Callable[[str], bool] = _multiline) -> str:
    """`data` as YAML for review: keys in their order, unicode as written, 100 columns, and
    each string `block` picks as a ``|`` block (a prompt or a diff reads as written).
    `fast` uses libyaml's emitter: its bytes differ from PyYAML's for some characters
    (emoji, line separators), so each kind of file keeps the emitter it was written with."""
    dumper = _dumper(fast, block)
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


@functools.cache
def _dumper(fast: bool, block: Callable[[str], bool]) -> type[yaml.SafeDumper]:
    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if block(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    base: type[yaml.SafeDumper] = (
        getattr(yaml, "CSafeDumper", yaml.SafeDumper) if fast else yaml.SafeDumper
    )
    dumper: type[yaml.SafeDumper] = type("Dumper", (base,), {})
    dumper.add_representer(str, text)
    return dumper
