"""Language-model providers only: Anthropic, OpenAI-compatible, the recorded cassette; their
pricing, retries, JSON salvage and the registry that builds one from the config. What a stage asks
a model (its prompt and the parsing of the answer) lives with the stage."""
