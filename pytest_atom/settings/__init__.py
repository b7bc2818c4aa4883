"""Settings: every ``--atom-*`` option, ini key and ``.atom/config.yaml`` entry, resolved once.

`options` is the one table of settings (each row its name, parser, scope and file rules);
`resolved` folds a front end's layers into one `RunSettings`; `config` reads
``.atom/config.yaml``; `modes` names the record and match modes; `tolerance` parses baseline
tolerances; `project` finds a project's root and ini; `output_paths` checks where a run
writes before anything runs.

Where to add: a setting is one row in `options`.
"""
