"""The package's exception types, in one place.

Every error a user can cause (a bad query, a bad pattern, a collection that cannot be
used, a damaged index) is a :class:`RagCoreError`, a ``ValueError`` subclass, so callers
can catch one type; its message says what happened and what to do.
"""

from __future__ import annotations


class RagCoreError(ValueError):
    """A request rag_core cannot carry out; the message says why and what to do instead."""


class QueryError(RagCoreError):
    """The query is empty, too long, not text, or not valid Unicode."""


class CollectionError(RagCoreError):
    """A collection operation that cannot be done; the message says why and what to do."""


class CollectionNotFoundError(CollectionError):
    """No collection of that name."""


class CollectionExistsError(CollectionError):
    """A collection of that name (compared without case) already exists."""


class CollectionBusyError(CollectionError):
    """Another process holds the collection's lock for longer than we waited."""


class CollectionDamagedError(CollectionError):
    """Part of a stored collection cannot be read; the message names the collection and the part."""


class InputFileError(RagCoreError):
    """A file given to read is not a regular file, is too large, or is malformed; the message
    names the file (and the row or member) and what is wrong."""


class StoreConnectionError(RagCoreError):
    """The PostgreSQL store cannot be reached or refused the connection."""


class IndexFormatError(RagCoreError):
    """An index folder is missing, damaged, or of an unknown format."""


class UnsafeIndexError(IndexFormatError):
    """An old-format folder that can only be read by unpickling, which was not allowed."""
