"""`brain mcp`: the brain's tools as an MCP server (the official `mcp` SDK, low-level server).

The only package that imports `mcp`; `bot.commands.mcp_server` imports it lazily so `brain
--help` and every other verb start without it.
"""
