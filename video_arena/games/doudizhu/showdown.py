"""An RLCard Showdown Doudizhu replay as a case's record (`video-arena import-cases --game doudizhu
--rlcard-showdown REPLAY.json`).

RLCard Showdown (datamllab/rlcard-showdown, the replay viewer and leaderboard of RLCard) writes one deal as
the replay object its viewer reads (server/tournament/tournament.py `doudizhu_tournament`, read by
src/view/ReplayView/DoudizhuReplayView.js):

    {"playerInfo":  [{"index": 0, "role": "landlord", ...}, {"index": 1, "role": "peasant", ...}, ...],
     "initHands":   ["S3 H3 ... BJ", "...", "..."],      the hands dealt, by player index (the landlord's 20)
     "moveHistory": [{"playerIdx": 0, "move": "S3 H3 D3 C4"}, {"playerIdx": 1, "move": "pass"}, ...]}

Cards are rlcard's suited cards (suit S, H, D or C then rank 3-9, T, J, Q, K, A, 2; `BJ` and `RJ` the black
and red jokers); a move is its cards separated by spaces, `pass` (or "") a pass.  Other keys (agentInfo, a
move's info or probabilities) are ignored.  The format has no bidding (RLCard's game has none) and does not
say which three of the landlord's cards were the extra cards; the toolkit's own optional key
`"landlordCards": "H5 CQ D8"` gives them (they are then shown at the top of the table, else that place stays
empty).  Every play is replayed on rlcard's game (engine.py) and must be legal; the deal must be finished.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from rlcard.games.doudizhu.utils import doudizhu_sort_card
from rlcard.games.base import Card

from video_arena.digests import sha256_bytes
from video_arena.games.doudizhu import engine as E
from video_arena.safe_io import read_bounded

FORMAT = "rlcard-showdown"
#: Largest replay file read: a deal with every move's probabilities is tens of kB.
MAX_BYTES = 1024 * 1024
#: Most moves a deal can have: every play but the last sheds at least one of the 54 cards, and at most two
#: passes follow a play, so no deal has more than 3 x 54 turns.
MAX_MOVES = 3 * 54
SUITS = "SHDC"


def _fail(name: str, what: str) -> ValueError:
    return ValueError(f"{name}: {what}")


def _cards(name: str, where: str, value: Any) -> list[str]:
    if not isinstance(value, str):
        raise _fail(name, f"{where} is not a string of cards")
    if len(value) > 3 * 54:
        raise _fail(name, f"{where} is longer than a deck")
    return value.split()


def _sorted(cards: list[str]) -> list[str]:
    """Cards in rlcard's hand order (low to high; suits in rlcard's order within a rank)."""
    def card(c: str) -> Card:
        return Card(c, "") if c in ("BJ", "RJ") else Card(c[0], c[1:])
    return [c.get_index() for c in sorted((card(c) for c in cards), key=functools.cmp_to_key(doudizhu_sort_card))]


def read_replay(path: Path) -> tuple[dict[str, Any], str]:
    """(the replay object, the file's SHA-256), read bounded; ValueError with one line when it is not one."""
    name = Path(path).name
    try:
        data, size = read_bounded(Path(path), MAX_BYTES)
    except OSError as exc:
        raise _fail(name, f"cannot be read ({exc.strerror or exc})") from None
    if size > MAX_BYTES:
        raise _fail(name, f"{size} bytes, more than the {MAX_BYTES} a replay may have")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _fail(name, f"not JSON ({str(exc)[:80]})") from None
    if not isinstance(doc, dict):
        raise _fail(name, f"not an RLCard Showdown replay (a JSON {type(doc).__name__}, not an object)")
    return doc, sha256_bytes(data)


def deal_of(name: str, doc: dict[str, Any]) -> tuple[list[list[str]], list[str], list[list]]:
    """(hands in table order: the landlord, the seat after it, the last; the landlord's extra cards or [];
    plays [seat, ranks] with seat 0 the landlord) of a replay object, its structure checked."""
    for key in ("playerInfo", "initHands", "moveHistory"):
        if key not in doc:
            raise _fail(name, f"no {key!r}: not an RLCard Showdown Doudizhu replay")
    info, hands, moves = doc["playerInfo"], doc["initHands"], doc["moveHistory"]
    if not isinstance(info, list) or len(info) != 3 or not all(isinstance(p, dict) for p in info):
        raise _fail(name, "playerInfo must list the three players")
    if sorted(p.get("index") for p in info if isinstance(p.get("index"), int)) != [0, 1, 2]:
        raise _fail(name, "playerInfo must give the players the indexes 0, 1 and 2")
    roles = {p["index"]: p.get("role") for p in info}
    landlords = [i for i, r in roles.items() if r == "landlord"]
    if len(landlords) != 1 or any(r not in ("landlord", "peasant") for r in roles.values()):
        raise _fail(name, "playerInfo must name one landlord and two peasants (role)")
    lord = landlords[0]
    if not isinstance(hands, list) or len(hands) != 3:
        raise _fail(name, "initHands must hold the three hands dealt")
    by_index = [_cards(name, f"initHands[{i}]", h) for i, h in enumerate(hands)]
    table = [by_index[(lord + k) % 3] for k in range(3)]       # play goes from index i to i + 1 (mod 3)
    bottom = _cards(name, "landlordCards", doc["landlordCards"]) if "landlordCards" in doc else []
    problem = E.deal_problem(table, bottom if bottom else table[0][-3:])
    if problem:
        raise _fail(name, problem)
    if not isinstance(moves, list) or not moves:
        raise _fail(name, "moveHistory holds no moves")
    if len(moves) > MAX_MOVES:
        raise _fail(name, f"moveHistory holds {len(moves)} moves, more than a deal can have ({MAX_MOVES})")
    held = [list(h) for h in table]
    plays = []
    for n, m in enumerate(moves):
        if not isinstance(m, dict) or type(m.get("playerIdx")) is not int or m["playerIdx"] not in (0, 1, 2):
            raise _fail(name, f"moveHistory[{n}] has no playerIdx 0, 1 or 2")
        seat = (m["playerIdx"] - lord) % 3
        cards = _cards(name, f"moveHistory[{n}].move", m.get("move"))
        if cards == ["pass"]:
            cards = []
        for c in cards:
            if c not in held[seat]:
                raise _fail(name, f"moveHistory[{n}]: player {m['playerIdx']} plays {c}, which is not in its hand")
            held[seat].remove(c)
        plays.append([seat, E.sort_cards("".join(E.rank_of(c) for c in cards))])
    return [_sorted(h) for h in table], _sorted(bottom), plays
