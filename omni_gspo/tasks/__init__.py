"""One module per task: its generator, its converter (a command) and its reward; `common` holds what they share."""
