"""Reports: what a run leaves for people and machines.

`text` is the failure report a person acts on; `properties` the JUnit properties; `trace` the
JSON trace (seed 003's shape, `trace_schema.json`); `html` the HTML report (`templates/`);
`summary` the terminal summary table; `cassette_transcript` a cassette as a transcript;
`clipping` keeps long texts out of reports.
"""
