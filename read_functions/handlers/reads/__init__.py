"""Book reads: one book, many books, how a book is kept, streams, and the read rules they share."""
