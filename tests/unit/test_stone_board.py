"""games/stone_board.py draws the Go and Gomoku boards: the pictures are pinned to the bytes the two
plugins drew with their own code before it was shared (a change to the shared drawing shows here
without re-rendering any media; `build-cases --media-only --games go,gomoku` checks the videos)."""
from __future__ import annotations

import hashlib

from video_arena.games.go.plugin import PLUGIN as GO
from video_arena.games.gomoku.plugin import PLUGIN as GOMOKU
from video_arena.games.stone_board import StoneBoard, StoneStyle

# the last Go move captures the corner stone, so a removed stone is pinned too
GO_RECORD = {"source": {"id": "t"}, "size": 19,
             "moves": [["B", "pd"], ["W", "dp"], ["B", "aa"], ["W", "ab"], ["B", "jj"], ["W", "ba"]]}
GO_FRAMES = ["71af98c8747e45b9", "fdb93ac3232f1ab9", "1f75449f0106f165", "8a639749056d05a0",
             "b2c5cea2a2e16a55", "a1c11e959952030d", "0c9f66e71be560b5"]
GOMOKU_RECORD = {"source": {"id": "t"}, "moves": ["H8", "J9", "A1", "P15", "H9"], "result": "draw"}
GOMOKU_FRAMES = ["3b1d2bba2f72b248", "7c95b1831002be93", "50645856472ee09a", "d74ccafde2137570",
                 "316b00914ea5b0cf", "a1a2cc850d6bbeb6"]


def _sha(img) -> str:
    return hashlib.sha256(img.tobytes()).hexdigest()[:16]


def test_go_frames_are_the_pinned_bytes():
    assert [_sha(f) for f in GO.render(GO_RECORD)] == GO_FRAMES
    assert _sha(GO.render_position(GO_RECORD, 6)) == GO_FRAMES[6]


def test_gomoku_frames_are_the_pinned_bytes():
    assert [_sha(f) for f in GOMOKU.render(GOMOKU_RECORD)] == GOMOKU_FRAMES
    assert _sha(GOMOKU.render_position(GOMOKU_RECORD, 3)) == GOMOKU_FRAMES[3]


def test_a_stone_is_centred_on_its_point_and_the_empty_board_is_not_drawn_on():
    board = StoneBoard(5, 120, 25, 10, (200, 160, 90), (30, 20, 10), [(2, 2)],
                       {"b": StoneStyle((10, 10, 10)), "w": StoneStyle((90, 90, 90), face=(240, 240, 240), inset=4)})
    assert board.margin == 10 and board.px(4) == 110
    empty = board.empty().tobytes()
    img = board.draw([(1, 3, "b"), (4, 0, "w")])
    assert board.empty().tobytes() == empty
    x, y = board.px(1), board.px(3)
    assert img.getpixel((x, y)) == (10, 10, 10) and img.getpixel((x + 12, y)) == board.empty().getpixel((x + 12, y))
    assert img.getpixel((board.px(4), board.px(0))) == (240, 240, 240)
    sprite, mask = board.sprite("b")
    assert sprite.size == mask.size == (22, 22)
    assert mask.getpixel((11, 11)) == 255 and mask.getpixel((0, 0)) == 0
