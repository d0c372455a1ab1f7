"""The `conway` command: `main` parses (`main.build_parser`), `commands` runs one function per subcommand.

`mcp_serve` is the other front door: Conway's own commands offered as MCP tools.
"""
