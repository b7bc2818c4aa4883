"""Reports: what a run leaves for people and machines.

A report format is a protocol (`format.ReportFormat`) plus one module per format, found
through the ``pytest_atom.report_formats`` entry-point group; every front end drives every
installed format through the same calls and names none (`format`).

- `text`: the failure report a person acts on (pytest's longrepr, `SpecResult.report()`);
- `junit`: the JUnit properties of a spec's test case;
- `json_trace`: the JSON trace file (`trace_schema.json`) and its transcripts;
- `html`: the HTML report (`templates/`), one page per session;
- `markdown`: the session's Markdown summary (``--atom-markdown``, GitHub's job summary), and
  the pieces any Markdown of run text is made of;
- `otel`: the session as one OpenTelemetry trace, sent to a collector (``--atom-otel``).

No format imports another (pyproject.toml's independence contract). What they share lives
in modules that are not formats: `phrases` (the words for a drift, a step, an environment
clue), `properties` (a run's figures by name), `trace` (the trace document,
``trace_schema.json``), `clipping` (long texts kept out of reports).

Reports of other things than one spec run: `summary` (the session's terminal summary),
`cassette_transcript` (`atom cassette show`), `table` (terminal tables, with `rich.table`),
`history_view` (what the HTML page shows of the history store).

Where to add: a format is a new module here with one `ReportFormat` object, and its line in
the entry-point group (pyproject.toml) and the independence contract; another
distribution's format is its own module and a line in its own group. A phrase or figure a
second format needs moves to `phrases` or `properties`.
"""
