"""A followed book's diffs for the multiplexed stream: what they are (:mod:`.book_diffs`) and the
one shared feed of them per book (:mod:`.diff_feed`)."""
