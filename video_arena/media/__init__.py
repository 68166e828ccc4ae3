"""Media: how a match's events are paced into frames, encoded bit-exactly to H.264 and decoded again.

Used by the game plugins (renderers), by build-cases and import-cases, and by the frame tests; it imports
nothing from ``games/`` or ``cases/``.
"""
