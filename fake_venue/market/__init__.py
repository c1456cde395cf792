"""The market model every venue shares: books, their motion and history, symbols, the clock."""
