"""External Brain: a zero-dependency knowledge base of Markdown cards for coding agents.

The package is a library first: every operation is a plain function over a `Vault`
that returns a result object; `cli` is the only module that parses arguments or prints.
"""

__version__ = "0.1.0"
