"""Compose a hand-written YAML file safely, with errors that point at the real cause.

Specs, the project config and scripts are written by hand and read by the same three
steps: compose nodes (which know their line and column), refuse what would blow up,
then build data. This module is those first steps, shared, so each loader only wraps
`YamlDocError` in its own error type:

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

import yaml

#: Nodes that aliases may add to a document, counted as if every alias were written out.
ALIAS_EXPANSION_LIMIT = 10_000


class YamlDocError(Exception):
    """A YAML file that cannot be used; `message` says why, `line`/`column` (1-based) where."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


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


def safe_load(text: str) -> object:
    """`yaml.safe_load`, with the same refusals and error marks as `compose`."""
    loader = yaml.SafeLoader(text)
    try:
        node = compose(loader)
        return None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:  # a constructor's error, e.g. an unknown tag
        raise from_yaml_error(exc) from None
    finally:
        loader.dispose()
