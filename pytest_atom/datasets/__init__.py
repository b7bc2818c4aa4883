"""datasets: one spec, many cases.

A spec's ``cases:`` (inline, or a ``.csv``, ``.jsonl``, ``.yaml`` or ``.json`` file beside it)
are read here, and each case's variables render the spec's text fields through Jinja2 (strict
undefined), before the spec loader builds one spec per case.

Where to add: a new case-file format is a reader for its suffix; a new templated field is a key
in the list of fields rendered.
"""
