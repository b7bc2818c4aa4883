"""The pytest front end: collection (`items`, `mod_tests`), the session plugin (`session`,
which drives every report format: docs/where-to-add.md), the `atom` fixture, the run's
settings and its suite run (`settings`)."""
