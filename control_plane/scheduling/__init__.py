"""Which node keeps which replica: the scheduler, its process, replica status, venues."""
