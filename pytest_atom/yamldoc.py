"""The one YAML loader for hand-written files, with errors that point at the real cause.

Specs, the project config, scripts, plugin eval cases (``case.yaml`` and Markdown
frontmatter) and the spec files read for their workspaces are written by hand and read by
the same three steps: compose nodes (which know their line and column), refuse what would
blow up, then build data. `load` does all three inside one ``try``, so every PyYAML
failure, a constructor's included (an unknown ``!tag``), becomes a `YamlDocError` with its
line and column, and each file kind only wraps that in its own error type (SpecError,
ConfigError, ScriptError, ...). Cassettes are written by the program, not by hand, and
keep their own fast reader (`pytest_atom.replay.fastyaml`).

* **Alias bombs.** A YAML alias stands for a whole node, so ten nested anchors of ten
  aliases each (the "billion laughs") stand for 10**10 nodes in a file of a dozen
  lines. Every walk over the data (schema validation, building a spec, expanding
  ``${VAR}``s, writing a request) would take forever. The node graph is measured
  before anything walks it, in time linear in the file, and a document whose aliases
  expand it by more than `ALIAS_EXPANSION_LIMIT` nodes is refused. Ordinary anchors
  (a shared `claude:` block, `<<: *base`) stay far below that.
* **Error marks.** PyYAML knows two places for a syntax error: where it gave up (the
  problem mark) and where the construct it was reading began (the context mark). For
  an unclosed quote or bracket it gives up at the end of the file, so the problem mark
  alone sends a person to the wrong line; the message names both, and the location
  given is the one that shows the cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from pytest_atom.errors import YamlDocError

#: Nodes that aliases may add to a document, counted as if every alias were written out.
ALIAS_EXPANSION_LIMIT = 10_000


def compose(loader: yaml.SafeLoader) -> yaml.Node | None:
    """The single document of `loader`'s stream as a node graph (None when it is empty).

    Raises YamlDocError for invalid YAML, for more than one document, and for aliases
    that expand the document beyond `ALIAS_EXPANSION_LIMIT` nodes or into themselves.
    """
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
    # At the end of the file the parser only noticed that something was never closed;
    # the construct it was reading (the context) is what the person has to fix.
    at_end = problem is not None and ("end of stream" in problem or "<stream end>" in problem)
    cause = context_mark if (at_end or problem_mark is None) and context_mark else problem_mark
    if cause is None:
        return YamlDocError(message)
    return YamlDocError(message, cause.line + 1, cause.column + 1)


def _at(mark: yaml.Mark | None) -> str:
    return "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"


def check_aliases(root: yaml.Node, limit: int = ALIAS_EXPANSION_LIMIT) -> None:
    """Refuse a node graph whose aliases expand it by more than `limit` nodes, or loop.

    Each node's expanded size is computed once (memoized), so this is linear in the
    number of distinct nodes however large the expansion would be.
    """
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
    """The node graph of `text`'s single document and its data (None, None when empty).

    `build` turns the node into data with the loader (a file kind that records where each
    value sits passes its own); by default the loader constructs the document. Composing
    and building share one ``try``: any YAML error, an unknown tag's included, is raised as
    a YamlDocError with its line and column, never as PyYAML's own exception.
    """
    try:  # the reader refuses control characters (an ESC, say) as it is made
        loader = loader_class(text)
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    try:
        node = compose(loader)
        if node is None:
            return None, None
        return node, (build or _construct)(loader, node)
    except yaml.YAMLError as exc:
        raise from_yaml_error(exc) from None
    finally:
        loader.dispose()


def _construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    return loader.construct_document(node)


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
