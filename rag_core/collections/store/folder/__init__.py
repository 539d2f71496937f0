"""The embedded store: one folder per collection, versions swapped in atomically.

Layout of a collection folder::

    <data dir>/collections/<name>/
        collection.json       name, format version, models and chunk settings
        CURRENT               the name of the live version (replaced atomically)
        versions/v000007/     version.json: documents, settings, and the segments it is made of
                              (with the checksum of each segment's manifest)
        segments/s000003/     an immutable index folder (rag_core.collections.store.index_files)
                              of at most SEGMENT_MAX_CHUNKS chunks, shared by the versions naming it
        data/<key>.json       side data of the relevance lab (judgments, snapshots), outside versions;
                              data-records.json holds each key's committed generation and checksum,
                              data-history/ copies of its last generations (:mod:`.side_data`)
        vectors/<key>.npy     dense vectors computed after the last commit, one file per
                              document, folded into the next version
                              (and progress.json, the embedder's progress)
        files/<sha256>.pdf    the original PDFs (page images, rebuilding a damaged index)
        .lock, .embed.lock    the writer lock and the embedder's slot

A commit writes complete new segment and version folders and only then points ``CURRENT``
at the version, so a crash (even ``kill -9``) at any moment leaves the previous version
loadable. Older versions are kept for ``VERSION_GRACE_S`` seconds (and the previous one
always), so a reader that has just read ``CURRENT`` never finds its files gone; a reader
that does meet a vanished or half-read version looks at ``CURRENT`` again and retries, and
calls a collection damaged only when a full checksum re-check proves it.

The modules: :mod:`.layout` (paths, reading versions and the live pointer), :mod:`.segments`
(writing segments and versions, pruning), :mod:`.vectors` (vectors written behind and the
embedder's progress), :mod:`.side_data` (side data as committed, checksummed generations),
:mod:`.store` (:class:`~.store.FolderStore`) and :mod:`.check` (check and repair).
"""
