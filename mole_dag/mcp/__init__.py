"""mole-mcp, the MCP front door: research mode (hand mole a question) and toolkit mode (use its
deterministic checks with your own model). The server and the toolkit-mode trade are described in
mole_dag/mcp/server.py."""
