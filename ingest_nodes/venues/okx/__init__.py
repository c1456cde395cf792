"""OKX v5: wire schemas, pure parsers, the stream protocol and the REST client."""
