"""Replay: model traffic recorded into a cassette once and answered from it after.

`cassette` is the file format (vcrpy's YAML; `vcr_shape` and `fastyaml` read it); `recording`
is the model source of a spec run (its script, its cassette or a recorded upstream) behind the
gateway; `responder` answers from a cassette and `upstream` forwards and records, to an
upstream `reachable` checked once a session before the first recording; `matchers`
are the match modes, comparing what `matching` extracts, after `normalize` and `raw_paths`
turned machine-specific parts into placeholders; `scrub` and `detector` keep secrets out;
`staleness`, `divergence` and `causes` say when and why a cassette no longer fits; `recall`
answers a judging session without starting it; `mcp_tape` records and replays stdio MCP
servers; `transcript` folds a conversation into turns; `estimate` prices a re-recording.

Where to add: a match mode is one `Matcher` class in `matchers` (its name in
`pytest_atom.settings.modes`).
"""
