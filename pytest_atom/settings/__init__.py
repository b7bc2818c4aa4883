"""settings: how specs run, whatever front end runs them, and the project's own files.

- `options`: the one table of settings. `RunSettings`'s fields are its rows (`Option`);
  every front end's options, the config file's keys and the docs' table come from it.
- `parsers`: a setting's value checked and typed, one function per kind of value (the
  baseline's tolerances among them).
- `resolved`: which place that sets a setting wins (command line, mark, fixture, ini
  file, `.atom/config.yaml`, default).
- `config`: ``.atom/config.yaml``; `project`: the project's root and pytest's ini file;
  `output_paths`: output folders checked before a run; `modes`: the names of the modes.
- `interpolate`: ``${VAR}``, ``${VAR:-default}`` and ``$$``, the one expansion the config file
  and a spec's ``env:`` share.

Where to add: a setting is one field of `RunSettings` (options.py) and nothing else; a new
kind of value is a parser in parsers.py; a new key of the config file itself (not a run
setting) is a converter in config.py.
"""
