"""Code-execution family: the sandbox that runs model-written code (``tool_envs.code.sandbox``)."""
