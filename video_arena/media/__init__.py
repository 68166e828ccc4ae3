"""Media: how a match's events are paced into frames, encoded bit-exactly to H.264 and decoded again,
and how a video is sampled into stills (grid.py: Protocol A's sampling grid and the stills cache).

Used by the game plugins (renderers), by build-cases and import-cases, by run-a, the provenance
check and the explorer, and by the frame tests; it imports nothing of the package but paths and
digests.
"""
