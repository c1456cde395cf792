"""What every venue's server side shares: a WebSocket connection and frame encoding."""
