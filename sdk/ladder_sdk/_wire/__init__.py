"""The API as data, with no I/O: each endpoint written once as a call, how an answer is read into a
model or an exception, the error tree, and when to retry."""
