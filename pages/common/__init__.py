"""What the pages share: ``state`` (data folder, caches, the collection picker, session keys)
and ``layout`` (page setup, top navigation, literal text, the error guard)."""
