"""toolsense: auditing what LLMs really know about tools."""

__version__ = "0.1.0"
