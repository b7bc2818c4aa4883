"""Load YAML as ``yaml.load(text, CSafeLoader)`` does, several times faster.

Loading a cassette is dominated by PyYAML's cost per node (a 1,000-interaction cassette has
~40,000): ``yaml.load`` builds a node object for each, resolves its tag in Python and then
constructs it through generators. Here the same libyaml parser's events become dicts, lists
and strings directly. Only untagged scalars, mappings, sequences, anchors and aliases are
built this way; anything else (a tag, a merge key, a collection as a key, several documents,
invalid YAML) is left to ``yaml.load``, so the result, or the error, is always its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode

from pytest_atom.errors import AtomError

_CLoader: type | None = getattr(yaml, "CSafeLoader", None)
_STR = "tag:yaml.org,2002:str"
_resolve: Callable[[type, str, tuple[bool, bool]], str] = yaml.resolver.Resolver().resolve
_constructor = yaml.constructor.SafeConstructor()


class _Unusual(AtomError):
    """Something the fast path leaves to yaml.load."""


def load(text: str) -> Any:
    if _CLoader is None:  # PyYAML without libyaml: no events worth having
        return yaml.load(text, Loader=yaml.SafeLoader)
    try:
        return _build(text)
    except Exception:  # noqa: BLE001 - yaml.load decides: the same result, or its error
        return yaml.load(text, Loader=_CLoader)


def _scalar(event: ScalarEvent, plain: dict[str, Any]) -> Any:
    """The scalar's value; `plain` caches resolved plain scalars (keys repeat a lot)."""
    if event.tag is not None:
        raise _Unusual
    value = event.value
    if not event.implicit[0]:  # quoted or block: a string
        return value
    if value in plain:
        return plain[value]
    tag = _resolve(ScalarNode, value, (True, False))
    if tag != _STR:  # int, float, bool, null, timestamp: immutable, so safe to cache
        value = _constructor.yaml_constructors[tag](_constructor, ScalarNode(tag, value))
    plain[event.value] = value
    return value


#: Sentinels: no root value yet; a mapping's key still awaiting its value.
_UNSET, _PENDING = object(), object()


def _build(text: str) -> Any:
    """The single document's value from libyaml's events; `_Unusual` for anything else."""
    assert _CLoader is not None
    loader = _CLoader(text)
    try:
        get = loader.get_event
        get()  # StreamStartEvent
        if get().__class__ is not DocumentStartEvent:
            raise _Unusual  # an empty stream
        return _document(get)
    finally:
        loader.dispose()


def _document(get: Callable[[], Any]) -> Any:
    """Build a document event by event: open collections wait on a stack as
    [container, key awaiting its value] until their end event."""
    anchors: dict[str, Any] = {}
    plain: dict[str, Any] = {}
    stack: list[list[Any]] = []
    root: Any = _UNSET
    while True:
        event = get()
        kind = event.__class__
        if kind is DocumentEndEvent:
            if root is _UNSET or stack or get().__class__ is DocumentStartEvent:
                raise _Unusual  # several documents: yaml.load's error
            return root
        opened = kind is MappingStartEvent or kind is SequenceStartEvent
        if not (opened or kind is ScalarEvent or kind is AliasEvent):  # a collection's end
            done = stack.pop()
            if done[1] is not _PENDING:
                raise _Unusual
            if not stack:
                root = done[0]
            continue
        value = _node(event, kind, opened, anchors, plain)
        if stack:
            _attach(stack[-1], value, opened)
        else:
            root = value
        if opened:
            stack.append([value, _PENDING])


def _node(
    event: Any, kind: type, opened: bool, anchors: dict[str, Any], plain: dict[str, Any]
) -> Any:
    """The value a scalar, alias or opening collection stands for, registered under its
    anchor (a collection as it opens, empty, as it may contain itself)."""
    if kind is ScalarEvent:
        value = _scalar(event, plain)
    elif opened:
        if event.tag is not None:
            raise _Unusual
        value = {} if kind is MappingStartEvent else []
    else:  # an alias
        if event.anchor not in anchors:
            raise _Unusual  # an undefined alias: yaml.load's error
        return anchors[event.anchor]
    if event.anchor is not None:
        if event.anchor in anchors:
            raise _Unusual  # a duplicate anchor: yaml.load's error
        anchors[event.anchor] = value
    return value


def _attach(top: list[Any], value: Any, opened: bool) -> None:
    """Put `value` into the innermost open collection (in a mapping: a key, then its value)."""
    container = top[0]
    if container.__class__ is list:
        container.append(value)
    elif top[1] is _PENDING:
        if opened or value.__class__ in (list, dict):
            raise _Unusual  # a collection as a key (a merge key `<<` never gets here)
        top[1] = value
    else:
        container[top[1]] = value
        top[1] = _PENDING
