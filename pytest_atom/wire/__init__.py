"""What passes between Claude Code and the model: values, no machinery.

`request` is a model request as the gateway sees it; `roles` says whose session a request
belongs to; `verdict_schema` is the shape a reflector's verdict must have. The gateway,
replay, agents and results all read these, so these read nothing of theirs.

Where to add: a value the gateway and a cassette both read of a request goes in `request`.
"""
