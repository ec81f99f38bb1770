"""The doors agents and people come in by: the command line, MCP over stdio, Claude Code
hooks and HTTP. Each parses its input, calls one operation, and formats the result."""
