"""Record and replay: the model gateway, cassettes, recording and the scrubbing of secrets."""
