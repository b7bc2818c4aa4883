"""What a spec, its settings and its result are: data and its validation, no machinery."""
