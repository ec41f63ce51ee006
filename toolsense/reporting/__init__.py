"""How results read, for people and for other tools: an estimate as text and every Markdown table
(tables.py), the static report.html (html_report.py, html_assets.py), TREC run files / qrels and
BEIR layouts (export.py). Rendered from results dicts and files only; nothing here computes a
statistic or imports evaluation code."""
