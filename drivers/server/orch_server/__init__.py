"""orch's server engine drivers: llama-server, vLLM, SGLang and Ollama as
engines of a plan (docs/drivers.md, "Server engines").

One package on the driver SDK (drivers/python/orch_driver): http.py (the
HTTP client and its typed errors), rows.py (one position's top-k row as the
servers return it, and the one place it becomes a digest and a record),
labels.py (engine labels and the job's server object), one adapter module per
family (llama_server.py, vllm.py, sglang.py, ollama.py: the axis table, the
self-report, request_for/parse_response as pure functions) and engine.py
(the driver.Engine that runs a job through an adapter).
"""
