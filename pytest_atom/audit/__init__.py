"""The cassette audit of `atom cassette check`, as typed findings the command renders.

`walk` finds the cassettes under the paths given and yields each `Finding`; `findings` reads
one cassette; `scrubbers` gives each cassette a Scrubber that knows the secrets of the spec
it was recorded for.
"""
