"""What passes between Claude Code and the model: values, no machinery.

`request` is a model request as the gateway sees it (`GatewayRequest`, its `Kind`, the
`Exchange` it was part of); `roles` says whose session a request belongs to; `verdict_schema`
is the shape a reflector's verdict must have. The gateway (`pytest_atom.gateway`) serves
them, replay records and matches them, agents mark their requests with a role, and a run's
result keeps its exchanges: all of them read these, so these read nothing of theirs.

Where to add: a value the gateway and a cassette both read of a request goes in `request`.
"""
