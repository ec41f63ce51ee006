"""Diagnostic benchmark generation from any catalog with an LLM: the Realistic Retrieval
Benchmark (easy/medium/hard over hard-negative pools), MCQ and QA probes — each item validated
by code and by an LLM judge, written incrementally in the released ToolSense formats."""
