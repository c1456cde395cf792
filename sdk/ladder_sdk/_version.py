"""The SDK's version, in one place (also sent in the User-Agent)."""

VERSION = "0.1.0"
