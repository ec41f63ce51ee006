"""Speaking to OpenAI-compatible servers (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio) the way every job does:
the client of a config section's endpoint with its key from the environment only, retries, a circuit breaker, one
line for an endpoint that cannot serve the job, and the model name checked against what the server lists
(``client.py``). The writer and judge of ``generate.py`` and ``baseline=openai`` stand on it."""
