"""The cassette audit of `atom cassette check`, as typed findings the command renders.

`walk` finds the cassettes under the paths given and yields each `Finding` (and the checks
that run outside the sandbox); `findings` reads one cassette (a secret, a raw machine path,
a request recorded without pytest-atom's placeholders, a malformed interaction, an answer
cut short; and the notes a replay copes with); `scrubbers` gives each cassette a Scrubber
that knows the secrets of the spec it was recorded for.
"""
