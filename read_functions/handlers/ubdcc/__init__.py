"""The UBDCC dialect: its wire conventions, its routes, and the tenant its compat listener serves."""
