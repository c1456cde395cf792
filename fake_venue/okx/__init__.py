"""OKX v5 public market data: the books channel, instruments and order books over REST."""
